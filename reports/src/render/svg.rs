//! Small hand-written SVG plots for the HTML report: element-wise errors of
//! an output and an op timeline. Plain rects and lines with axes and
//! labels; no plotting crate, no scripts, no external fonts.

use std::collections::BTreeSet;
use std::fmt::Write;

use super::{esc, fmt_num};
use crate::{ErrorSample, OutputComparison, TimelineEntry};

const WIDTH: f64 = 540.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 40.0;

/// Most ops drawn in a timeline; the rest are counted in a note.
pub(crate) const MAX_TIMELINE_ROWS: usize = 40;

/// Height of the legend band above the error plot.
const LEGEND: f64 = 20.0;

/// Bars of the sampled absolute errors over the flat index. Bars above
/// `atol` (or every non-zero bar when there is none) are red; non-finite
/// errors are drawn full height in dark red; `atol` is a dashed line. The
/// legend sits in its own band above the plot, so no bar can cover it.
pub(crate) fn error_plot(output: &OutputComparison, sample: &ErrorSample) -> String {
    const HEIGHT: f64 = 220.0 + LEGEND;
    const PLOT_TOP: f64 = TOP + LEGEND;
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - PLOT_TOP - BOTTOM;
    let values = &sample.abs_err;
    let finite_max = values
        .iter()
        .copied()
        .filter(|x| x.is_finite())
        .fold(0.0_f64, f64::max);
    let atol = output.atol.filter(|a| a.is_finite() && *a >= 0.0);
    let (step, ticks) = nice_axis(finite_max.max(atol.unwrap_or(0.0) * 1.25));
    let y_max = step * ticks as f64;
    let y_of = |v: f64| PLOT_TOP + plot_h - (v / y_max).clamp(0.0, 1.0) * plot_h;

    let mut s = svg_open(HEIGHT, &format!("Absolute error of output {}", output.name));
    legend(&mut s, atol, values.iter().any(|v| !v.is_finite()));
    axes(&mut s, PLOT_TOP, plot_w, plot_h);
    for k in 0..=ticks {
        let v = step * k as f64;
        let y = y_of(v);
        if k > 0 {
            let _ = write!(
                s,
                r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" class="grid"/>"##,
                LEFT + plot_w
            );
        }
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{}</text>"##,
            LEFT - 6.0,
            y + 4.0,
            fmt_num(v)
        );
    }

    let n = values.len().max(1);
    let slot = plot_w / n as f64;
    let gap = if slot > 4.0 { 1.0 } else { 0.0 };
    for (i, &v) in values.iter().enumerate() {
        let x = LEFT + slot * i as f64 + gap / 2.0;
        let (top, class) = if !v.is_finite() {
            (PLOT_TOP, "bar nonfinite")
        } else if atol.map_or(v > 0.0, |a| v > a) {
            (y_of(v), "bar bad")
        } else {
            (y_of(v), "bar ok")
        };
        let h = (PLOT_TOP + plot_h - top).max(if v != 0.0 { 1.0 } else { 0.0 });
        let _ = write!(
            s,
            r##"<rect x="{x:.2}" y="{:.2}" width="{:.2}" height="{h:.2}" class="{class}"><title>element {}: {}</title></rect>"##,
            PLOT_TOP + plot_h - h,
            (slot - gap).max(0.5),
            sample.index(i),
            fmt_num(v),
        );
    }
    if let Some(a) = atol {
        let y = y_of(a);
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" class="tol"/>"##,
            LEFT + plot_w,
        );
    }

    let mut ticks = vec![(0.0, sample.start.to_string())];
    if values.len() > 2 {
        let mid = values.len() / 2;
        ticks.push(((mid as f64 + 0.5) / n as f64, sample.index(mid).to_string()));
    }
    if values.len() > 1 {
        ticks.push((1.0, sample.index(values.len() - 1).to_string()));
    }
    x_ticks(&mut s, &ticks, PLOT_TOP, plot_w, plot_h);
    let title = if sample.step > 1 {
        format!("flat element index (1 in {} elements shown)", sample.step)
    } else {
        "flat element index".to_string()
    };
    axis_titles(&mut s, &title, "|error|", PLOT_TOP, plot_w, HEIGHT);
    s.push_str("</svg>");
    s
}

/// One bar per op on its own row, over time from the case's start. Ops
/// named in `flagged` (they have findings) are red.
pub(crate) fn timeline_plot(timeline: &[TimelineEntry], flagged: &BTreeSet<&str>, title: &str) -> String {
    const ROW: f64 = 18.0;
    const LABEL_W: f64 = 170.0;
    let shown = &timeline[..timeline.len().min(MAX_TIMELINE_ROWS)];
    let height = TOP + ROW * shown.len() as f64 + BOTTOM;
    let plot_w = WIDTH - LABEL_W - RIGHT;
    let plot_h = ROW * shown.len() as f64;
    let last = shown
        .iter()
        .map(|e| e.start_us.saturating_add(e.dur_us))
        .max()
        .unwrap_or(0);
    let (step, ticks) = nice_axis(last as f64);
    let step = step.max(1.0);
    let end = step * ticks as f64;
    let x_of = |us: u64| LABEL_W + us as f64 / end * plot_w;

    let mut s = svg_open(height, title);
    for k in 1..=ticks {
        let x = LABEL_W + plot_w * k as f64 / ticks as f64;
        let _ = write!(
            s,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" class="grid"/>"##,
            TOP + plot_h
        );
    }
    for (i, e) in shown.iter().enumerate() {
        let y = TOP + ROW * i as f64;
        let class = if flagged.contains(e.node.as_str()) {
            "span bad"
        } else {
            "span"
        };
        let x = x_of(e.start_us);
        let w = (x_of(e.start_us.saturating_add(e.dur_us)) - x).max(1.5);
        let label = truncate(&format!("{} · {}", e.node, e.op), 26);
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{}</text><rect x="{x:.2}" y="{:.1}" width="{w:.2}" height="{:.1}" rx="2" class="{class}"><title>{} ({}): start {}, {}{}</title></rect>"##,
            LABEL_W - 8.0,
            y + ROW * 0.7,
            esc(&label),
            y + 3.0,
            ROW - 6.0,
            esc(&e.node),
            esc(&e.op),
            fmt_us(e.start_us),
            fmt_us(e.dur_us),
            if e.swept {
                " (a share of a fused sweep)"
            } else {
                ""
            },
        );
    }
    let _ = write!(
        s,
        r##"<line x1="{LABEL_W}" y1="{:.1}" x2="{:.1}" y2="{:.1}" class="axis"/><line x1="{LABEL_W}" y1="{TOP}" x2="{LABEL_W}" y2="{:.1}" class="axis"/>"##,
        TOP + plot_h,
        LABEL_W + plot_w,
        TOP + plot_h,
        TOP + plot_h,
    );
    for k in 0..=ticks {
        let anchor = match k {
            0 => "start",
            k if k == ticks => "end",
            _ => "middle",
        };
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="{anchor}">{}</text>"##,
            LABEL_W + plot_w * k as f64 / ticks as f64,
            TOP + plot_h + 16.0,
            fmt_us((step * k as f64).round() as u64),
        );
    }
    let _ = write!(
        s,
        r##"<text x="{:.1}" y="{:.1}" class="axis-title" text-anchor="middle">time since case start</text></svg>"##,
        LABEL_W + plot_w / 2.0,
        height - 6.0,
    );
    s
}

/// One horizontal bar per case, longest first as given, each labelled with
/// its whole name (the plot widens to fit the longest), over a duration
/// axis from 0. `bad` bars are red; a case under a millisecond gets a
/// sliver and says `< 1 ms`.
pub(crate) fn durations_plot(bars: &[(String, u64, bool)], title: &str) -> String {
    const ROW: f64 = 18.0;
    let label_w = bars
        .iter()
        .map(|(name, _, _)| text_w(name))
        .fold(80.0_f64, f64::max)
        + 14.0;
    let plot_w = 360.0;
    let width = label_w + plot_w + RIGHT + 40.0;
    let plot_h = ROW * bars.len() as f64;
    let height = TOP + plot_h + BOTTOM;
    let longest = bars.iter().map(|b| b.1).max().unwrap_or(0);
    let (step, ticks) = nice_axis(longest as f64);
    let step = step.max(1.0);
    let end = step * ticks as f64;
    let x_of = |ms: u64| label_w + ms as f64 / end * plot_w;

    let mut s = format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" class="plot" viewBox="0 0 {width:.0} {height}" width="{width:.0}" height="{height}" role="img" aria-label="{}">"##,
        esc(title)
    );
    for k in 1..=ticks {
        let x = label_w + plot_w * k as f64 / ticks as f64;
        let _ = write!(
            s,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" class="grid"/>"##,
            TOP + plot_h
        );
    }
    for (i, (name, ms, bad)) in bars.iter().enumerate() {
        let y = TOP + ROW * i as f64;
        let class = if *bad { "span bad" } else { "span" };
        let w = (x_of(*ms) - label_w).max(1.5);
        let time = esc(&if *ms == 0 {
            "< 1 ms".to_string()
        } else {
            super::fmt_ms(*ms)
        });
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{}</text><rect x="{label_w:.2}" y="{:.1}" width="{w:.2}" height="{:.1}" rx="2" class="{class}"><title>{}: {time}</title></rect><text x="{:.1}" y="{:.1}" class="tick">{time}</text>"##,
            label_w - 8.0,
            y + ROW * 0.7,
            esc(name),
            y + 3.0,
            ROW - 6.0,
            esc(name),
            label_w + w + 4.0,
            y + ROW * 0.7,
        );
    }
    let _ = write!(
        s,
        r##"<line x1="{label_w}" y1="{:.1}" x2="{:.1}" y2="{:.1}" class="axis"/><line x1="{label_w}" y1="{TOP}" x2="{label_w}" y2="{:.1}" class="axis"/>"##,
        TOP + plot_h,
        label_w + plot_w,
        TOP + plot_h,
        TOP + plot_h,
    );
    for k in 0..=ticks {
        let anchor = match k {
            0 => "start",
            k if k == ticks => "end",
            _ => "middle",
        };
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="{anchor}">{}</text>"##,
            label_w + plot_w * k as f64 / ticks as f64,
            TOP + plot_h + 16.0,
            match (step * k as f64).round() as u64 {
                0 => "0".to_string(),
                ms => super::fmt_ms(ms),
            },
        );
    }
    let _ = write!(
        s,
        r##"<text x="{:.1}" y="{:.1}" class="axis-title" text-anchor="middle">wall time of the case</text></svg>"##,
        label_w + plot_w / 2.0,
        height - 6.0,
    );
    s
}

fn svg_open(height: f64, label: &str) -> String {
    format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" class="plot" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" aria-label="{}">"##,
        esc(label)
    )
}

/// The error plot's key: a swatch per bar colour (the non-finite one only
/// when such bars are drawn) and the dashed `atol` line.
fn legend(s: &mut String, atol: Option<f64>, non_finite: bool) {
    let y = TOP;
    let (ok, bad) = match atol {
        Some(_) => ("within atol", "above atol"),
        None => ("zero", "non-zero"),
    };
    let mut items: Vec<(&str, String)> = vec![("bar ok", ok.to_string()), ("bar bad", bad.to_string())];
    if non_finite {
        items.push(("bar nonfinite", "NaN or inf (full height)".to_string()));
    }
    let mut x = LEFT;
    for (class, label) in items {
        let _ = write!(
            s,
            r##"<rect x="{x:.1}" y="{y:.1}" width="10" height="10" class="{class}"/><text x="{:.1}" y="{:.1}" class="tick">{}</text>"##,
            x + 14.0,
            y + 9.0,
            esc(&label),
        );
        x += 14.0 + text_w(&label) + 16.0;
    }
    if let Some(a) = atol {
        let label = format!("atol {}", fmt_num(a));
        let _ = write!(
            s,
            r##"<line x1="{x:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" class="tol"/><text x="{:.1}" y="{:.1}" class="tick tol-label">{}</text>"##,
            y + 5.0,
            x + 22.0,
            y + 5.0,
            x + 26.0,
            y + 9.0,
            esc(&label),
        );
    }
}

/// A generous estimate of the width of `text` at the 11 px tick font.
fn text_w(text: &str) -> f64 {
    text.chars().count() as f64 * 6.5
}

fn axes(s: &mut String, top: f64, plot_w: f64, plot_h: f64) {
    let _ = write!(
        s,
        r##"<line x1="{LEFT}" y1="{top}" x2="{LEFT}" y2="{:.1}" class="axis"/><line x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" class="axis"/>"##,
        top + plot_h,
        top + plot_h,
        LEFT + plot_w,
        top + plot_h,
    );
}

/// Labels under the x axis at fractions of the plot width.
fn x_ticks(s: &mut String, ticks: &[(f64, String)], top: f64, plot_w: f64, plot_h: f64) {
    for (frac, label) in ticks {
        let anchor = if *frac <= 0.0 {
            "start"
        } else if *frac >= 1.0 {
            "end"
        } else {
            "middle"
        };
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="{anchor}">{}</text>"##,
            LEFT + plot_w * frac,
            top + plot_h + 16.0,
            esc(label),
        );
    }
}

fn axis_titles(s: &mut String, x_title: &str, y_title: &str, top: f64, plot_w: f64, height: f64) {
    let _ = write!(
        s,
        r##"<text x="{:.1}" y="{:.1}" class="axis-title" text-anchor="middle">{}</text><text transform="translate(14 {:.1}) rotate(-90)" class="axis-title" text-anchor="middle">{}</text>"##,
        LEFT + plot_w / 2.0,
        height - 6.0,
        esc(x_title),
        top + (height - top - BOTTOM) / 2.0,
        esc(y_title),
    );
}

/// A tick step of 1, 2, 2.5 or 5 times a power of ten and the number of
/// steps (3 to 5) that covers `max`, so axis labels are round numbers.
fn nice_axis(max: f64) -> (f64, u32) {
    if !(max.is_finite() && max > 0.0) {
        return (0.25, 4);
    }
    let raw = max / 4.0;
    let pow = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * pow)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * pow);
    let ticks = (max / step).ceil().max(1.0) as u32;
    (step, ticks)
}

/// `850 µs`, `12.3 ms`, `1.50 s`.
fn fmt_us(us: u64) -> String {
    if us < 1_000 {
        format!("{us} µs")
    } else if us < 1_000_000 {
        format!("{:.1} ms", us as f64 / 1e3)
    } else {
        format!("{:.2} s", us as f64 / 1e6)
    }
}

/// At most `max` characters, with an ellipsis when cut.
fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_plot_draws_one_bar_per_value_and_the_tolerance() {
        let mut o = OutputComparison::new("y<1>", 4);
        o.atol = Some(0.1);
        let sample = ErrorSample {
            start: 0,
            step: 1,
            abs_err: vec![0.0, 0.5, f64::NAN, 0.05],
        };
        let svg = error_plot(&o, &sample);
        let bars: Vec<&str> = svg
            .split("<rect")
            .filter(|r| r.contains("<title>element"))
            .collect();
        assert_eq!(bars.len(), 4);
        assert_eq!(bars.iter().filter(|r| r.contains("bar bad")).count(), 1);
        assert_eq!(bars.iter().filter(|r| r.contains("bar nonfinite")).count(), 1);
        assert!(svg.contains("aria-label=\"Absolute error of output y&lt;1&gt;\""));
    }

    #[test]
    fn the_legend_names_every_colour_above_the_bars() {
        let mut o = OutputComparison::new("y", 4);
        o.atol = Some(0.1);
        let sample = ErrorSample {
            start: 0,
            step: 1,
            abs_err: vec![0.0, 0.5, f64::NAN, 0.5],
        };
        let svg = error_plot(&o, &sample);
        for label in ["within atol", "above atol", "NaN or inf", "atol 0.1"] {
            assert!(svg.contains(&format!(">{label}")), "{label}: {svg}");
        }
        // Every legend item lies in the band above the plot, where no bar
        // reaches: the tallest bar starts at TOP + LEGEND.
        let legend_y = |label: &str| -> f64 {
            let before = &svg[..svg.find(&format!(">{label}")).unwrap()];
            let y = before.rsplit("y=\"").next().unwrap();
            y[..y.find('"').unwrap()].parse().unwrap()
        };
        for label in ["within atol", "NaN or inf", "atol 0.1"] {
            assert!(legend_y(label) < TOP + LEGEND, "{label}");
        }
        let top_bar = svg
            .split("<rect")
            .filter(|r| r.contains("<title>element"))
            .map(|r| {
                let y = r.split("y=\"").nth(1).unwrap();
                y[..y.find('"').unwrap()].parse::<f64>().unwrap()
            })
            .fold(f64::INFINITY, f64::min);
        assert!(top_bar >= TOP + LEGEND, "{top_bar}");
        // Without non-finite errors, no key for them.
        let sample = ErrorSample {
            start: 0,
            step: 1,
            abs_err: vec![0.0, 0.5],
        };
        assert!(!error_plot(&o, &sample).contains("NaN or inf"));
    }

    #[test]
    fn timeline_escapes_names_and_caps_rows() {
        let tl: Vec<TimelineEntry> = (0..50)
            .map(|i| TimelineEntry {
                node: format!("n<{i}>"),
                op: "add".into(),
                start_us: i * 10,
                dur_us: 8,
                swept: false,
            })
            .collect();
        let flagged: BTreeSet<&str> = ["n<3>"].into_iter().collect();
        let svg = timeline_plot(&tl, &flagged, "Op timeline");
        assert_eq!(svg.matches("<rect").count(), MAX_TIMELINE_ROWS);
        assert_eq!(svg.matches("span bad").count(), 1);
        assert!(svg.contains("n&lt;3&gt;") && !svg.contains("n<3>"));
    }

    #[test]
    fn durations_draw_every_bar_with_its_whole_name() {
        let long = "suites/broken/broken_accumulate_into_preallocated_output".to_string();
        let bars = vec![
            (long.clone(), 12, true),
            ("suites/ops/add_f32".to_string(), 3, false),
            ("suites/ops/tiny".to_string(), 0, false),
        ];
        let svg = durations_plot(&bars, "Case durations");
        assert_eq!(svg.matches("<rect").count(), 3);
        assert_eq!(svg.matches("span bad").count(), 1);
        assert!(svg.contains(&format!(">{long}</text>")), "the name is not cut");
        assert!(svg.contains(">&lt; 1 ms</text>"));
        assert!(svg.contains("wall time of the case") && !svg.contains("since case start"));
        // The labels fit left of the bars.
        let x: f64 = svg
            .split("<rect x=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(x >= text_w(&long), "{x}");
    }

    #[test]
    fn axes_use_round_steps() {
        assert_eq!(nice_axis(0.75), (0.2, 4));
        assert_eq!(nice_axis(397.0), (100.0, 4));
        assert_eq!(nice_axis(1.0), (0.25, 4));
        assert_eq!(nice_axis(0.0), (0.25, 4));
        let (step, ticks) = nice_axis(3.3e-6);
        assert!(step * f64::from(ticks) >= 3.3e-6 && ticks <= 5);
    }

    #[test]
    fn durations_and_truncation() {
        assert_eq!(fmt_us(850), "850 µs");
        assert_eq!(fmt_us(12_300), "12.3 ms");
        assert_eq!(truncate("abcdef", 4), "abc…");
    }
}
