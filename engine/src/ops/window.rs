//! Sliding-window geometry shared by `conv` and the pooling ops: kernel,
//! strides, dilations, pads and `auto_pad`, with ONNX's rules for the output
//! size (floor, or ceil with `ceil_mode`).

use crate::error::{attr_err, op_err, rank_err, shape_err, Result};
use crate::ops::Attrs;

/// How missing pads are chosen (ONNX `auto_pad`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AutoPad {
    /// Use the explicit `pads`.
    #[default]
    NotSet,
    /// No padding.
    Valid,
    /// Output size `ceil(in / stride)`; an odd total pad puts the extra at the end.
    SameUpper,
    /// Like `SameUpper`, the extra at the beginning.
    SameLower,
}

impl AutoPad {
    fn parse(s: &str) -> Result<AutoPad> {
        Ok(match s {
            "NOTSET" | "" => AutoPad::NotSet,
            "VALID" => AutoPad::Valid,
            "SAME_UPPER" => AutoPad::SameUpper,
            "SAME_LOWER" => AutoPad::SameLower,
            _ => return attr_err(format!("attr 'auto_pad': unknown value '{s}'")),
        })
    }

    fn name(self) -> &'static str {
        match self {
            AutoPad::NotSet => "NOTSET",
            AutoPad::Valid => "VALID",
            AutoPad::SameUpper => "SAME_UPPER",
            AutoPad::SameLower => "SAME_LOWER",
        }
    }
}

/// The window attrs of one node. Lists left empty take their defaults
/// (stride 1, dilation 1, pad 0) once the spatial rank is known.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Window {
    /// Kernel extent per spatial axis; empty for `conv`, which reads it from the weight.
    pub kernel: Vec<usize>,
    pub strides: Vec<usize>,
    pub dilations: Vec<usize>,
    /// `[begin₀, begin₁, …, end₀, end₁, …]`, as ONNX writes them.
    pub pads: Vec<usize>,
    pub auto_pad: AutoPad,
    pub ceil_mode: bool,
}

/// The resolved geometry of one spatial axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Axis1 {
    pub input: usize,
    pub kernel: usize,
    pub stride: usize,
    pub dilation: usize,
    pub pad_begin: usize,
    pub pad_end: usize,
    pub output: usize,
}

impl Axis1 {
    /// The first input coordinate (may be negative: padding) of window `o`.
    pub fn start(&self, o: usize) -> i64 {
        (o * self.stride) as i64 - self.pad_begin as i64
    }

    /// The kernel taps `lo..hi` of window `o` that read inside the input
    /// (the taps before and after read padding).
    pub fn taps_inside(&self, o: usize) -> (usize, usize) {
        let start = self.start(o);
        let lo = if start >= 0 {
            0
        } else {
            start.unsigned_abs() as usize
        }
        .div_ceil(self.dilation);
        let room = self.input as i64 - start;
        let hi = if room <= 0 { 0 } else { room as usize }
            .div_ceil(self.dilation)
            .min(self.kernel);
        (lo.min(hi), hi)
    }

    /// The windows `lo..hi` whose kernel tap `k` reads inside the input.
    pub fn outputs_inside(&self, k: usize) -> (usize, usize) {
        let off = (k * self.dilation) as i64 - self.pad_begin as i64;
        let lo = if off >= 0 { 0 } else { off.unsigned_abs() as usize }.div_ceil(self.stride);
        let room = self.input as i64 - off;
        let hi = if room <= 0 { 0 } else { room as usize }
            .div_ceil(self.stride)
            .min(self.output);
        (lo.min(hi), hi)
    }

    /// A length-1 axis that maps its one element to itself: lifts a 1-D
    /// window to 2-D so that one kernel serves both.
    pub const UNIT: Axis1 = Axis1 {
        input: 1,
        kernel: 1,
        stride: 1,
        dilation: 1,
        pad_begin: 0,
        pad_end: 0,
        output: 1,
    };
}

/// The rows and columns axes of a 1-D or 2-D window (a 1-D window as one
/// row), or `None` for three spatial axes and more.
pub fn planar(axes: &[Axis1]) -> Option<(Axis1, Axis1)> {
    match axes {
        [w] => Some((Axis1::UNIT, *w)),
        [h, w] => Some((*h, *w)),
        _ => None,
    }
}

/// The attr names a window reads (for `Attrs::only`).
pub const WINDOW_ATTRS: [&str; 6] = [
    "kernel_shape",
    "strides",
    "dilations",
    "pads",
    "auto_pad",
    "ceil_mode",
];

fn positive(a: &Attrs, key: &str) -> Result<Vec<usize>> {
    let v = a.usize_list(key)?.unwrap_or_default();
    if v.contains(&0) {
        return attr_err(format!("attr '{key}': values must be positive, got {v:?}"));
    }
    Ok(v)
}

impl Window {
    pub fn from_attrs(a: &Attrs) -> Result<Window> {
        let auto_pad = match a.0.get("auto_pad") {
            None | Some(serde_json::Value::Null) => AutoPad::NotSet,
            Some(serde_json::Value::String(s)) => AutoPad::parse(s)?,
            Some(v) => return attr_err(format!("attr 'auto_pad': expected a string, got {v}")),
        };
        Ok(Window {
            kernel: positive(a, "kernel_shape")?,
            strides: positive(a, "strides")?,
            dilations: positive(a, "dilations")?,
            pads: a.usize_list("pads")?.unwrap_or_default(),
            auto_pad,
            ceil_mode: a.i64("ceil_mode")?.unwrap_or(0) != 0,
        })
    }

    /// The attrs as the graph format writes them (defaults left out).
    pub fn to_attrs(&self, mut a: Attrs) -> Attrs {
        for (key, v) in [
            ("kernel_shape", &self.kernel),
            ("strides", &self.strides),
            ("dilations", &self.dilations),
            ("pads", &self.pads),
        ] {
            if !v.is_empty() {
                a = a.with(key, v.clone());
            }
        }
        if self.auto_pad != AutoPad::NotSet {
            a = a.with("auto_pad", self.auto_pad.name());
        }
        if self.ceil_mode {
            a = a.with("ceil_mode", 1);
        }
        a
    }

    /// Resolves every spatial axis for an input of spatial shape `input`
    /// and a kernel of shape `kernel`; errors name the attr.
    pub fn resolve(&self, op: &str, input: &[usize], kernel: &[usize]) -> Result<Vec<Axis1>> {
        let n = input.len();
        let list = |key: &str, v: &[usize], want: usize, default: usize| -> Result<Vec<usize>> {
            match v.len() {
                0 => Ok(vec![default; want]),
                k if k == want => Ok(v.to_vec()),
                k => attr_err(format!(
                    "op '{op}': attr '{key}' has {k} values, the input has {n} spatial axes (needs {want})"
                )),
            }
        };
        if kernel.len() != n {
            return rank_err(format!(
                "op '{op}': kernel has {} spatial axes, the input {n}",
                kernel.len()
            ));
        }
        if let Some(i) = kernel.iter().position(|&k| k == 0) {
            // A window of no taps has no output size (ONNX leaves it
            // undefined); conv's kernel comes from the weight's shape.
            return shape_err(format!(
                "op '{op}': spatial axis {i}: the kernel has extent 0, kernel shape {kernel:?}"
            ));
        }
        let strides = list("strides", &self.strides, n, 1)?;
        let dilations = list("dilations", &self.dilations, n, 1)?;
        let pads = list("pads", &self.pads, 2 * n, 0)?;
        let mut axes = Vec::with_capacity(n);
        for i in 0..n {
            let (k, s, d) = (kernel[i], strides[i], dilations[i]);
            let span = (k - 1) * d + 1;
            let (pb, pe) = match self.auto_pad {
                AutoPad::NotSet => (pads[i], pads[n + i]),
                AutoPad::Valid => (0, 0),
                AutoPad::SameUpper | AutoPad::SameLower => {
                    let out = input[i].div_ceil(s);
                    let total = ((out.saturating_sub(1)) * s + span).saturating_sub(input[i]);
                    if self.auto_pad == AutoPad::SameUpper {
                        (total / 2, total - total / 2)
                    } else {
                        (total - total / 2, total / 2)
                    }
                }
            };
            let padded = input[i] + pb + pe;
            if padded < span {
                return shape_err(format!(
                    "op '{op}': spatial axis {i}: the window spans {span} but the padded input has {padded}"
                ));
            }
            let mut out = if self.ceil_mode {
                (padded - span).div_ceil(s) + 1
            } else {
                (padded - span) / s + 1
            };
            // ceil_mode: a last window that starts inside the end padding is dropped.
            if self.ceil_mode && (out - 1) * s >= input[i] + pb {
                out -= 1;
            }
            axes.push(Axis1 {
                input: input[i],
                kernel: k,
                stride: s,
                dilation: d,
                pad_begin: pb,
                pad_end: pe,
                output: out,
            });
        }
        Ok(axes)
    }
}

/// The static output shape `[N, C, out…]` of a window op on input type
/// `shape` (`-1` dims stay unknown), or `None` when the rank is unknown.
pub fn infer_spatial(
    op: &str,
    w: &Window,
    shape: &Option<Vec<i64>>,
    kernel: &[usize],
    channels: i64,
) -> Result<Option<Vec<i64>>> {
    let Some(s) = shape else { return Ok(None) };
    if s.len() < 3 {
        return rank_err(format!(
            "op '{op}': input must be [N, C, spatial…], got rank {}",
            s.len()
        ));
    }
    let mut out = vec![s[0], channels];
    if s[2..].iter().all(|&d| d >= 0) {
        let input: Vec<usize> = s[2..].iter().map(|&d| d as usize).collect();
        out.extend(w.resolve(op, &input, kernel)?.iter().map(|a| a.output as i64));
    } else {
        out.extend(std::iter::repeat_n(-1, s.len() - 2));
    }
    Ok(Some(out))
}

/// Marks a window position that falls in the padding.
pub const PAD: u32 = u32::MAX;

/// For every kernel position `k` (row-major over the kernel axes) and output
/// position `o` (row-major over the output axes), the offset in one
/// contiguous input plane of the element the window reads, or [`PAD`]:
/// `table[k * outputs + o]`. Conv's im2col and the pools both walk it, so
/// the geometry is computed once per call, not per channel.
pub fn gather_table(axes: &[Axis1]) -> Result<Vec<u32>> {
    let plane: usize = axes.iter().map(|a| a.input).product();
    if plane >= PAD as usize {
        return op_err(format!(
            "input plane of {plane} elements is too large for a window op"
        ));
    }
    let kernels: usize = axes.iter().map(|a| a.kernel).product();
    let outputs: usize = axes.iter().map(|a| a.output).product();
    let mut table = vec![PAD; kernels * outputs];
    let mut kk = vec![0usize; axes.len()];
    for k in 0..kernels {
        let mut oo = vec![0usize; axes.len()];
        for o in 0..outputs {
            let mut off = 0usize;
            let mut inside = true;
            for (d, a) in axes.iter().enumerate() {
                let c = a.start(oo[d]) + (kk[d] * a.dilation) as i64;
                if c < 0 || c >= a.input as i64 {
                    inside = false;
                    break;
                }
                off = off * a.input + c as usize;
            }
            if inside {
                table[k * outputs + o] = off as u32;
            }
            odometer(&mut oo, axes.iter().map(|a| a.output));
        }
        odometer(&mut kk, axes.iter().map(|a| a.kernel));
    }
    Ok(table)
}

/// For every output position, how many window positions lie inside the
/// padded input (the divisor of an average that counts the pads).
pub fn padded_counts(axes: &[Axis1]) -> Vec<usize> {
    let outputs: usize = axes.iter().map(|a| a.output).product();
    let mut counts = Vec::with_capacity(outputs);
    let mut oo = vec![0usize; axes.len()];
    for _ in 0..outputs {
        let mut n = 1;
        for (d, a) in axes.iter().enumerate() {
            let hi = (a.input + a.pad_end) as i64;
            let lo = -(a.pad_begin as i64);
            n *= (0..a.kernel)
                .filter(|&k| {
                    let c = a.start(oo[d]) + (k * a.dilation) as i64;
                    c >= lo && c < hi
                })
                .count();
        }
        counts.push(n);
        odometer(&mut oo, axes.iter().map(|a| a.output));
    }
    counts
}

/// Advances a row-major multi-index over `dims` by one.
pub(crate) fn odometer(idx: &mut [usize], dims: impl DoubleEndedIterator<Item = usize> + ExactSizeIterator) {
    for (i, d) in idx.iter_mut().zip(dims).rev() {
        *i += 1;
        if *i < d {
            return;
        }
        *i = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assert_cause;

    fn w(a: Attrs) -> Window {
        Window::from_attrs(&a).unwrap()
    }

    #[test]
    fn floor_and_ceil_output_sizes() {
        // 5 wide, kernel 2, stride 2: floor gives 2, ceil 3.
        let a = Attrs::new().with("strides", vec![2]);
        assert_eq!(w(a.clone()).resolve("p", &[5], &[2]).unwrap()[0].output, 2);
        assert_eq!(
            w(a.with("ceil_mode", 1)).resolve("p", &[5], &[2]).unwrap()[0].output,
            3
        );
    }

    #[test]
    fn ceil_mode_drops_a_window_starting_in_the_end_pad() {
        // in 4, pad 1+1, kernel 2, stride 3: ceil((6-2)/3)+1 = 3, but window 2 starts at 6-1=5 >= 4+1.
        let a = Attrs::new()
            .with("strides", vec![3])
            .with("pads", vec![1, 1])
            .with("ceil_mode", 1);
        assert_eq!(w(a).resolve("p", &[4], &[2]).unwrap()[0].output, 2);
    }

    #[test]
    fn same_upper_and_lower_split_odd_pads() {
        let up = w(Attrs::new().with("auto_pad", "SAME_UPPER"))
            .resolve("c", &[5], &[4])
            .unwrap()[0];
        assert_eq!((up.pad_begin, up.pad_end, up.output), (1, 2, 5));
        let lo = w(Attrs::new().with("auto_pad", "SAME_LOWER"))
            .resolve("c", &[5], &[4])
            .unwrap()[0];
        assert_eq!((lo.pad_begin, lo.pad_end, lo.output), (2, 1, 5));
    }

    #[test]
    fn dilation_widens_the_window() {
        let a = w(Attrs::new().with("dilations", vec![2]))
            .resolve("c", &[7], &[3])
            .unwrap()[0];
        assert_eq!(a.output, 3);
    }

    #[test]
    fn gather_table_marks_pads() {
        // in 3, kernel 2, pad 1+1, stride 2: windows start at -1 and 1.
        let a = w(Attrs::new().with("strides", vec![2]).with("pads", vec![1, 1]))
            .resolve("p", &[3], &[2])
            .unwrap();
        assert_eq!(a[0].output, 2);
        // k=0: coords -1, 1; k=1: coords 0, 2.
        assert_eq!(gather_table(&a).unwrap(), vec![PAD, 1, 0, 2]);
        assert_eq!(padded_counts(&a), vec![2, 2]);
    }

    #[test]
    fn inside_ranges_match_the_brute_force_count() {
        for input in 1..7 {
            for kernel in 1..4 {
                for stride in 1..4 {
                    for dilation in 1..3 {
                        for (pb, pe) in [(0, 0), (1, 0), (0, 2), (2, 1), (3, 3)] {
                            let a = Window {
                                strides: vec![stride],
                                dilations: vec![dilation],
                                pads: vec![pb, pe],
                                ..Window::default()
                            };
                            let Ok(ax) = a.resolve("p", &[input], &[kernel]) else {
                                continue;
                            };
                            let a = ax[0];
                            let inside = |o: usize, k: usize| {
                                let c = a.start(o) + (k * a.dilation) as i64;
                                c >= 0 && c < a.input as i64
                            };
                            for o in 0..a.output {
                                let (lo, hi) = a.taps_inside(o);
                                let want: Vec<usize> = (0..a.kernel).filter(|&k| inside(o, k)).collect();
                                assert_eq!((lo..hi).collect::<Vec<_>>(), want, "{a:?} o={o}");
                            }
                            for k in 0..a.kernel {
                                let (lo, hi) = a.outputs_inside(k);
                                let want: Vec<usize> = (0..a.output).filter(|&o| inside(o, k)).collect();
                                assert_eq!((lo..hi).collect::<Vec<_>>(), want, "{a:?} k={k}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn bad_attrs_are_named() {
        let e = w(Attrs::new().with("strides", vec![1, 1]))
            .resolve("conv", &[5], &[3])
            .unwrap_err();
        assert_cause!(e, Attr, "'strides'");
        let e = Window::from_attrs(&Attrs::new().with("auto_pad", "SAME")).unwrap_err();
        assert_cause!(e, Attr, "auto_pad");
        let e = w(Attrs::new()).resolve("pool", &[2], &[3]).unwrap_err();
        assert_cause!(e, Shape, "3");
    }
}
