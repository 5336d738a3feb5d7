//! Zero false positives: DebugMode on random graphs of library ops (views
//! with negative strides, broadcasts, set/inc_subtensor, chains the pass
//! rewrites in place, parameters) gives no finding, except `non_finite`
//! where random values really overflow (exp of a large sum).

use proptest::prelude::*;
use vigil_debugmode::{DebugConfig, DebugMode, Finding, Kind};

/// Findings about memory and in-place behaviour.
fn defects(f: Vec<Finding>) -> Vec<Finding> {
    f.into_iter().filter(|f| f.kind != Kind::NON_FINITE).collect()
}

use vigil_testkit::random_graph::{build, feeds, step};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn default_checks_find_nothing_in_correct_graphs(
        mutable in prop::collection::vec(any::<bool>(), 1..4),
        steps in prop::collection::vec(step(), 1..24),
        extra in prop::collection::vec(any::<usize>(), 0..3),
        seed in 0u64..100,
    ) {
        let case = build(&mutable, &steps, &extra, seed);
        let r = DebugMode::new(DebugConfig::default()).check(&case.graph, &feeds(&case)).unwrap();
        let stats = r.stats.clone();
        let found = defects(r.findings);
        prop_assert!(found.is_empty(), "{:#?}", found);
        let r = stats;
        prop_assert_eq!(r.compared, r.exact + r.tolerated);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn every_check_finds_nothing_in_correct_graphs(
        mutable in prop::collection::vec(any::<bool>(), 1..4),
        steps in prop::collection::vec(step(), 1..16),
        seed in 0u64..100,
    ) {
        let case = build(&mutable, &steps, &[], seed);
        let cfg = DebugConfig { seed, ..DebugConfig::all() };
        let found = defects(DebugMode::new(cfg).check(&case.graph, &feeds(&case)).unwrap().findings);
        prop_assert!(found.is_empty(), "{:#?}", found);
    }
}
