//! `vigil run` throughput: 1,000 suite cases in validate mode.

use std::hint::black_box;
use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use rayon::prelude::*;
use vigil::runner::{run_case, Mode, RunConfig, ToleranceOverrides};
use vigil::suite::discover;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

/// 1,000 cases made by cycling through the shipped suites.
fn thousand_cases(dir: &Path) {
    let shipped = discover(&[Path::new(env!("CARGO_MANIFEST_DIR")).join("suites")]).unwrap();
    for i in 0..1000 {
        let src = &shipped[i % shipped.len()].location;
        copy_dir(src, &dir.join(format!("case_{i:04}")));
    }
}

fn run_1000(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    thousand_cases(tmp.path());
    let cases = discover(&[tmp.path().to_path_buf()]).unwrap();
    assert_eq!(cases.len(), 1000);
    let registry = vigil::default_registry();
    let mut group = c.benchmark_group("run");
    group.sample_size(10);
    for mode in [Mode::Plain, Mode::Validate, Mode::Debug] {
        let cfg = RunConfig::new(mode, ToleranceOverrides::default());
        group.bench_function(format!("1000_cases_{}", mode.name()), |b| {
            b.iter(|| {
                let r: Vec<_> = cases.par_iter().map(|c| run_case(c, &cfg, &registry)).collect();
                assert!(r.iter().all(|c| c.status == vigil_reports::Status::Pass));
                black_box(r)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, run_1000);
criterion_main!(benches);
