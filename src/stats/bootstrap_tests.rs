//! Tests of the bootstrap: reference fixture, determinism across threads and invariants.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde::Deserialize;

use super::*;
use crate::stats::bootstrap_input::Scratch;
use crate::stats::bradley_terry::fit_bradley_terry;
use crate::stats::bradley_terry::{LinearisedStart, Newton};
use crate::stats::counts::Outcome;
use crate::stats::refit::{LaneData, LaneRefit, REFIT_LANES};
use crate::stats::test_support::{ModelNames, Row, read_fixture, synthetic_rows};

#[derive(Deserialize)]
struct Fixture {
    prior: f64,
    models: Vec<String>,
    comparisons: Vec<Row>,
    expected: BTreeMap<String, Expected>,
}

#[derive(Deserialize)]
struct Expected {
    win_rate: f64,
    win_rate_ci: [f64; 2],
}

/// Builds the input and the full-data fit.
fn prepare(
    p: usize,
    rows: &[(usize, usize, Outcome, usize)],
    prior: f64,
) -> (BootstrapInput, BtFit) {
    let input = BootstrapInput::from_rows(p, rows.iter().copied()).expect("valid rows");
    let fit = fit_bradley_terry(input.counts(), prior, None).expect("fit");
    (input, fit)
}

fn run(
    input: &BootstrapInput,
    fit: &BtFit,
    unit: BootstrapUnit,
    seed: u64,
    threads: usize,
) -> BootstrapResult {
    bootstrap(input, unit, 0.1, 1000, seed, threads, fit).expect("bootstrap")
}

#[test]
fn matches_bootstrap_fixture_for_several_seeds() {
    let fx: Fixture = read_fixture("bootstrap.json");
    let names = ModelNames::new(&fx.models);
    let mut tasks = BTreeMap::new();
    let rows: Vec<_> = fx
        .comparisons
        .iter()
        .map(|r| {
            let (a, b, o) = names.row(r);
            let next = tasks.len();
            let task = *tasks.entry(r.question_id.clone()).or_insert(next);
            (a, b, o, task)
        })
        .collect();
    let (input, fit) = prepare(names.len(), &rows, fx.prior);
    let mut max_err: f64 = 0.0;
    for seed in [0, 1, 2024, u64::MAX] {
        let result = bootstrap(
            &input,
            BootstrapUnit::Comparison,
            fx.prior,
            1000,
            seed,
            2,
            &fit,
        )
        .expect("bootstrap");
        for (name, want) in &fx.expected {
            let i = names.index(name);
            assert!(
                (fit.win_rate[i] - want.win_rate).abs() < 1e-7,
                "{name} point estimate"
            );
            let ci = result.win_rate[i];
            let err = (ci.lo - want.win_rate_ci[0])
                .abs()
                .max((ci.hi - want.win_rate_ci[1]).abs());
            assert!(
                err <= 0.02,
                "seed {seed} {name}: {ci:?} vs {:?}",
                want.win_rate_ci
            );
            max_err = max_err.max(err);
        }
    }
    eprintln!("bootstrap.json: max bound error {max_err:.4} over 4 seeds");
}

#[test]
fn result_is_identical_for_any_thread_count() {
    let rows = synthetic_rows(5, 600, 40);
    let (input, fit) = prepare(5, &rows, 0.1);
    for unit in [BootstrapUnit::Comparison, BootstrapUnit::Task] {
        let one = run(&input, &fit, unit, 11, 1);
        assert_eq!(one, run(&input, &fit, unit, 11, 2));
        assert_eq!(one, run(&input, &fit, unit, 11, 3));
        assert_eq!(one, run(&input, &fit, unit, 11, 0));
        assert_ne!(one, run(&input, &fit, unit, 12, 2));
    }
}

/// Tails kept per thread and tails shared under a lock give the same intervals.
#[test]
fn own_and_shared_tails_agree() {
    let rows = synthetic_rows(5, 600, 40);
    let (input, fit) = prepare(5, &rows, 0.1);
    let default = run(&input, &fit, BootstrapUnit::Comparison, 11, 2);
    for limit in [0, usize::MAX] {
        super::OWN_TAILS_LIMIT.with(|c| c.set(Some(limit)));
        for threads in [1, 2, 3] {
            assert_eq!(
                default,
                run(&input, &fit, BootstrapUnit::Comparison, 11, threads),
                "tails limit {limit}, {threads} threads"
            );
        }
    }
    super::OWN_TAILS_LIMIT.with(|c| c.set(None));
    // 1000 resamples of 100 models keep their own; a million resamples share.
    assert!(super::Tails::bytes(100, 1000) <= super::OWN_TAILS_BYTES);
    assert!(super::Tails::bytes(100, 1_000_000) > super::OWN_TAILS_BYTES);
}

/// The refits compiled for AVX2 and the portable ones give the same bits: on a CPU with AVX2
/// the test runs both (one thread, which takes the test thread's choice); elsewhere it checks
/// the portable path against itself.
#[test]
fn refits_give_the_same_bits_with_and_without_avx2() {
    let win_all: Vec<_> = (0..40)
        .map(|k| (0, 1 + k % 3, Outcome::AWins, k))
        .chain((0..60).map(|k| {
            let (a, b) = [(1, 2), (2, 3), (1, 3)][k % 3];
            (a, b, Outcome::Tie, k % 7)
        }))
        .collect();
    for (p, rows, prior) in [
        (5, synthetic_rows(5, 600, 30), 0.1),
        (12, synthetic_rows(12, 3000, 80), 0.1),
        // Model 0 wins every game, with almost no prior: refits far from the start.
        (4, win_all, 1e-6),
    ] {
        let (input, fit) = prepare(p, &rows, prior);
        for unit in [BootstrapUnit::Comparison, BootstrapUnit::Task] {
            for resamples in [1, 7, 1003] {
                let go = || bootstrap(&input, unit, prior, resamples, 5, 1, &fit).expect("boot");
                let native = go();
                crate::stats::refit::PORTABLE.with(|c| c.set(true));
                let portable = go();
                crate::stats::refit::PORTABLE.with(|c| c.set(false));
                assert_eq!(
                    native, portable,
                    "{p} models, {unit:?}, {resamples} resamples"
                );
            }
        }
    }
}

#[test]
fn quadrupling_rows_halves_interval_widths() {
    let base = synthetic_rows(5, 2000, 100);
    // Each row four times, as four separate tasks, so both units see 4× the data.
    let quad: Vec<_> = (0..4)
        .flat_map(|copy| {
            base.iter()
                .map(move |&(a, b, o, t)| (a, b, o, t + copy * 100))
        })
        .collect();
    let (small, small_fit) = prepare(5, &base, 0.1);
    let (large, large_fit) = prepare(5, &quad, 0.1);
    for unit in [BootstrapUnit::Comparison, BootstrapUnit::Task] {
        let w1 = run(&small, &small_fit, unit, 5, 2);
        let w4 = run(&large, &large_fit, unit, 5, 2);
        for i in 0..5 {
            for (name, a, b) in [
                ("rating", w1.rating[i], w4.rating[i]),
                ("win rate", w1.win_rate[i], w4.win_rate[i]),
            ] {
                let ratio = b.width() / a.width();
                assert!(
                    (0.375..=0.625).contains(&ratio),
                    "{unit:?} {name} model {i}: ratio {ratio}"
                );
            }
        }
    }
}

#[test]
fn both_bad_rows_move_no_interval() {
    // DESIGN §2.9: both-bad rows are counted and move no number. The same rated rows with
    // both-bad rows added (on their tasks and on tasks of their own) give the same
    // intervals, bit for bit, by either unit.
    let rated: Vec<_> = synthetic_rows(4, 400, 60)
        .into_iter()
        .filter(|r| r.2 != Outcome::BothBad)
        .collect();
    let mut with_both_bad = Vec::new();
    for (k, &row) in rated.iter().enumerate() {
        with_both_bad.push(row);
        if k % 3 == 0 {
            let (a, b, _, task) = row;
            let task = if k % 2 == 0 { task } else { 1000 + k };
            with_both_bad.push((b, a, Outcome::BothBad, task));
        }
    }
    let (plain, plain_fit) = prepare(4, &rated, 0.1);
    let (more, more_fit) = prepare(4, &with_both_bad, 0.1);
    assert!(more.counts().both_bad_total() > 100);
    for unit in [BootstrapUnit::Comparison, BootstrapUnit::Task] {
        assert_eq!(
            run(&plain, &plain_fit, unit, 7, 2),
            run(&more, &more_fit, unit, 7, 2),
            "{unit:?}"
        );
    }
}

#[test]
fn task_unit_with_about_one_row_per_task_agrees_with_comparison_unit() {
    // 1200 rows, two rated ones sharing a task (both-bad rows are no task's): resampled by
    // task picks.
    let mut rows = synthetic_rows(4, 1200, 1200);
    let rated: Vec<usize> = (0..rows.len())
        .filter(|&k| rows[k].2 != Outcome::BothBad)
        .collect();
    let [.., first, second] = rated[..] else {
        panic!("synthetic rows hold rated ones")
    };
    rows[second].3 = rows[first].3;
    let (input, fit) = prepare(4, &rows, 0.1);
    assert!(!tasks_are_single_rows(&input));
    let by_row = run(&input, &fit, BootstrapUnit::Comparison, 3, 2);
    let by_task = run(&input, &fit, BootstrapUnit::Task, 3, 2);
    for (a, b) in by_row.win_rate.iter().zip(&by_task.win_rate) {
        assert!(
            (a.lo - b.lo).abs() < 0.015 && (a.hi - b.hi).abs() < 0.015,
            "{a:?} vs {b:?}"
        );
    }
}

#[test]
fn task_unit_with_one_row_per_task_is_drawn_as_the_comparison_unit() {
    let rows = synthetic_rows(4, 1200, 1200);
    let (input, fit) = prepare(4, &rows, 0.1);
    assert!(tasks_are_single_rows(&input));
    let by_row = run(&input, &fit, BootstrapUnit::Comparison, 3, 2);
    let by_task = run(&input, &fit, BootstrapUnit::Task, 3, 2);
    assert_eq!(by_task.unit, BootstrapUnit::Task, "reported as asked");
    assert_eq!(
        (&by_task.rating, &by_task.win_rate),
        (&by_row.rating, &by_row.win_rate)
    );
}

#[test]
fn clustered_tasks_widen_the_task_interval() {
    // Each task repeats one comparison 8 times: the task bootstrap sees 8× fewer
    // independent units, so its intervals are about sqrt(8) wider.
    let base = synthetic_rows(4, 300, 300);
    let rows: Vec<_> = base
        .iter()
        .flat_map(|&row| std::iter::repeat_n(row, 8))
        .collect();
    let (input, fit) = prepare(4, &rows, 0.1);
    let by_row = run(&input, &fit, BootstrapUnit::Comparison, 3, 2);
    let by_task = run(&input, &fit, BootstrapUnit::Task, 3, 2);
    for (a, b) in by_row.win_rate.iter().zip(&by_task.win_rate) {
        let ratio = b.width() / a.width();
        assert!((2.2..=3.6).contains(&ratio), "ratio {ratio}");
    }
}

#[test]
fn degenerate_inputs() {
    let (input, fit) = prepare(3, &[], 0.1);
    for unit in [BootstrapUnit::Comparison, BootstrapUnit::Task] {
        let result = run(&input, &fit, unit, 1, 2);
        assert!(
            result
                .win_rate
                .iter()
                .all(|ci| ci.lo == 0.5 && ci.hi == 0.5)
        );
    }
    let (empty, empty_fit) = prepare(0, &[], 0.1);
    assert!(
        run(&empty, &empty_fit, BootstrapUnit::Task, 1, 2)
            .rating
            .is_empty()
    );
    assert_eq!(
        bootstrap(&input, BootstrapUnit::Task, 0.1, 0, 1, 1, &fit),
        Err(StatsError::NoResamples)
    );
    let wrong = BtFit::from_theta(vec![0.0; 2], 0);
    assert!(matches!(
        bootstrap(&input, BootstrapUnit::Task, 0.1, 10, 1, 1, &wrong),
        Err(StatsError::LengthMismatch { .. })
    ));
}

fn dataset() -> impl Strategy<Value = (usize, Vec<(usize, usize, Outcome, usize)>)> {
    (3usize..6, 300usize..600, any::<u64>()).prop_map(|(p, n, salt)| {
        let rows = synthetic_rows(p, n + (salt % 97) as usize, 30)
            .into_iter()
            .enumerate()
            .map(|(k, (a, b, o, t))| {
                // Flip a salt-chosen subset of outcomes to vary the data between cases.
                let flip = (salt.rotate_left(k as u32 % 64) ^ k as u64).is_multiple_of(7);
                (a, b, if flip { o.swapped() } else { o }, t)
            })
            .collect();
        (p, rows)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Percentile intervals contain the full-data estimate, for both units (300 resamples
    /// keep the 64 cases quick; the property does not depend on the count).
    #[test]
    fn intervals_contain_point_estimate((p, rows) in dataset(), seed in any::<u64>()) {
        let (input, fit) = prepare(p, &rows, 0.1);
        for unit in [BootstrapUnit::Comparison, BootstrapUnit::Task] {
            let result = bootstrap(&input, unit, 0.1, 300, seed, 2, &fit).expect("bootstrap");
            for i in 0..p {
                prop_assert!(result.rating[i].contains(fit.rating[i]), "{:?} rating {}", unit, i);
                prop_assert!(result.win_rate[i].contains(fit.win_rate[i]), "{:?} win rate {}", unit, i);
            }
        }
    }
}

/// Draws 48 resamples (by `unit`) of synthetic data with `p` models and `rows` rows, four
/// at a time, and hands each group to `check` with what a refit needs: the active pairs, the
/// resampled data in lanes, the linearised start, the lane buffers and a Newton solver, and
/// the group's first resample.
fn with_resamples(
    unit: BootstrapUnit,
    p: usize,
    rows: usize,
    mut check: impl FnMut(
        &[(usize, usize)],
        &LaneData,
        &LinearisedStart,
        &mut LaneRefit,
        &mut Newton,
        usize,
    ),
) {
    let (input, fit) = prepare(p, &synthetic_rows(p, rows, 40), 0.1);
    let pairs = &input.active.models;
    let full = PairData::from_counts(input.counts(), &input.active);
    let start = LinearisedStart::new(pairs, &full, 0.1, &fit.theta).expect("SPD Hessian");
    let mut data = vec![LaneData::new(pairs.len())];
    let mut scratch = Scratch::default();
    let (mut refit, mut newton) = (LaneRefit::new(p), Newton::new(p));
    for first in (0..48).step_by(REFIT_LANES) {
        input.resample_batch(unit, 9, first, REFIT_LANES, &mut data, &mut scratch);
        check(pairs, &data[0], &start, &mut refit, &mut newton, first);
    }
}

/// A fully converged fit of lane `lane` of `data` (`p` models).
fn exact_fit(
    pairs: &[(usize, usize)],
    data: &LaneData,
    lane: usize,
    newton: &mut Newton,
    p: usize,
) -> Vec<f64> {
    let mut single = PairData::default();
    data.lane_into(lane, &mut single);
    let mut exact = vec![0.0; p];
    newton
        .solve(pairs, &single, 0.1, &mut exact, 1e-13)
        .expect("converges");
    exact
}

/// The resample fits (linearised start + Newton stopped at `RESAMPLE_STEP_TOL`, the fallback
/// of lanes the chord method gives up on) agree with fully converged fits of the same
/// resampled data to far better than the resampling noise.
#[test]
fn resample_fits_match_fully_converged_fits() {
    for (unit, p, rows) in [
        (BootstrapUnit::Comparison, 8, 4000),
        (BootstrapUnit::Task, 5, 600),
    ] {
        with_resamples(unit, p, rows, |pairs, data, start, refit, newton, first| {
            refit.start(start, pairs, data);
            for lane in 0..REFIT_LANES {
                let mut single = PairData::default();
                data.lane_into(lane, &mut single);
                let mut quick = vec![0.0; p];
                refit.theta_lane(lane, &mut quick);
                newton
                    .solve(pairs, &single, 0.1, &mut quick, RESAMPLE_STEP_TOL)
                    .expect("converges");
                let exact = exact_fit(pairs, data, lane, newton, p);
                for (q, e) in quick.iter().zip(&exact) {
                    let r = first + lane;
                    assert!((q - e).abs() < 1e-8, "{unit:?} resample {r}: {q} vs {e}");
                }
            }
        });
    }
}

#[test]
fn comparisons_only_input_gives_the_same_comparison_bootstrap_and_refuses_tasks() {
    use crate::stats::BootstrapInputBuilder;
    let rows: Vec<(usize, usize, Outcome, usize)> = (0..300)
        .map(|k| {
            let o = [
                Outcome::AWins,
                Outcome::BWins,
                Outcome::Tie,
                Outcome::BothBad,
            ][k % 4];
            (
                k % 3,
                (k + 1) % 3,
                if k % 7 == 0 { Outcome::AWins } else { o },
                k % 11,
            )
        })
        .collect();
    let full = BootstrapInput::from_rows(3, rows.iter().copied()).expect("valid");
    let mut lean = BootstrapInputBuilder::comparisons_only(3);
    for &(a, b, o, t) in &rows {
        lean.add(a, b, o, t).expect("valid");
    }
    let lean = lean.build();
    let fit = fit_bradley_terry(full.counts(), 0.1, None).expect("fit");
    let x = bootstrap(&full, BootstrapUnit::Comparison, 0.1, 200, 3, 2, &fit).expect("boot");
    let y = bootstrap(&lean, BootstrapUnit::Comparison, 0.1, 200, 3, 2, &fit).expect("boot");
    assert_eq!(x, y);
    assert_eq!(
        bootstrap(&lean, BootstrapUnit::Task, 0.1, 200, 3, 2, &fit),
        Err(StatsError::NoTaskData)
    );
}

/// The chord refits (linearised start, then chord steps on the full-data Hessian inverse,
/// stopped at `CHORD_TOL`) agree with fully converged fits of the same resampled data to
/// far better than the resampling noise (5e-4 in θ is 0.09 rating points; the Monte Carlo
/// error of a bound at 1000 resamples is about a point).
#[test]
fn chord_refits_match_fully_converged_fits() {
    for (unit, p, rows) in [
        (BootstrapUnit::Comparison, 8, 4000),
        (BootstrapUnit::Task, 5, 600),
        (BootstrapUnit::Comparison, 20, 3000),
    ] {
        let mut refined = 0;
        with_resamples(unit, p, rows, |pairs, data, start, refit, newton, first| {
            let converged = refit.refit(start, pairs, data, REFIT_LANES, CHORD_TOL);
            for lane in (0..REFIT_LANES).filter(|&l| converged[l]) {
                refined += 1;
                let mut quick = vec![0.0; p];
                refit.theta_lane(lane, &mut quick);
                let exact = exact_fit(pairs, data, lane, newton, p);
                for (q, e) in quick.iter().zip(&exact) {
                    let r = first + lane;
                    assert!(
                        (q - e).abs() < 5e-4,
                        "{unit:?} p={p} resample {r}: {q} vs {e}"
                    );
                }
            }
        });
        // Small task resamples move far from the full data; there the Newton fallback works.
        if unit == BootstrapUnit::Comparison {
            assert!(
                refined >= 44,
                "{unit:?} p={p}: chord converged in only {refined} of 48"
            );
        }
    }
}

/// Lanes do not mix: a resample refits to the same bits, and gets the same win rates,
/// whichever resamples share its batch and in whichever lane it sits.
#[test]
fn lanes_refit_independently() {
    let p = 7;
    with_resamples(
        BootstrapUnit::Comparison,
        p,
        2000,
        |pairs, data, start, refit, _, _| {
            let converged = refit.refit(start, pairs, data, REFIT_LANES, CHORD_TOL);
            let mut rates = vec![0.0; REFIT_LANES * p];
            refit.win_rates(REFIT_LANES, &mut rates);
            let mut together = vec![0.0; p];
            for (lane, &was_converged) in converged.iter().enumerate() {
                refit.theta_lane(lane, &mut together);
                // The same resample alone, in lane 0, with the others zeroed.
                let mut alone = LaneData::new(pairs.len());
                for (k, (w, n)) in alone.w.iter_mut().zip(&mut alone.n).enumerate() {
                    (w[0], n[0]) = (data.w[k][lane], data.n[k][lane]);
                }
                let single = refit.refit(start, pairs, &alone, 1, CHORD_TOL);
                assert_eq!(single[0], was_converged);
                let mut by_itself = vec![0.0; p];
                refit.theta_lane(0, &mut by_itself);
                assert_eq!(together, by_itself, "lane {lane}");
                let mut alone_rates = vec![0.0; p];
                refit.win_rates(1, &mut alone_rates);
                assert_eq!(
                    rates[lane * p..(lane + 1) * p],
                    alone_rates,
                    "win rates of lane {lane}"
                );
                // Restore the batch for the next lane.
                refit.refit(start, pairs, data, REFIT_LANES, CHORD_TOL);
            }
        },
    );
}

/// A "resample" equal to the full data refits to the full-data θ̂ at once (its steps are
/// zero or rounding-sized, which must end the chord method, not send it to Newton).
#[test]
fn chord_refit_of_the_full_data_stays_at_the_full_fit() {
    let p = 6;
    let (input, fit) = prepare(p, &synthetic_rows(p, 2000, 40), 0.1);
    let pairs = &input.active.models;
    let full = PairData::from_counts(input.counts(), &input.active);
    let start = LinearisedStart::new(pairs, &full, 0.1, &fit.theta).expect("SPD Hessian");
    let mut data = LaneData::new(pairs.len());
    for (k, (w, n)) in data.w.iter_mut().zip(&mut data.n).enumerate() {
        (*w, *n) = ([full.w[k]; REFIT_LANES], [full.n[k]; REFIT_LANES]);
    }
    let mut refit = LaneRefit::new(p);
    let step = refit.start(&start, pairs, &data);
    assert!(step.iter().all(|&s| s < 1e-8), "start steps {step:?}");
    assert_eq!(
        refit.refit(&start, pairs, &data, REFIT_LANES, CHORD_TOL),
        [true; REFIT_LANES]
    );
    let mut theta = vec![0.0; p];
    for lane in 0..REFIT_LANES {
        refit.theta_lane(lane, &mut theta);
        for (t, f) in theta.iter().zip(&fit.theta) {
            assert!((t - f).abs() < 1e-8, "{t} vs {f}");
        }
    }
}

/// What the refits' stopping point costs, measured against what the intervals describe: the
/// largest refit error stays below 1% of the spread of the resampled strengths (the Monte
/// Carlo error of a 2.5% bound at 1000 resamples is about 8% of that spread), at small and at
/// large data, where the spread is narrow and a fixed tolerance matters most.
#[test]
fn refit_errors_are_a_sliver_of_the_resampling_spread() {
    for (p, rows) in [(8, 4000), (20, 10_000), (50, 40_000)] {
        let (_, fit) = prepare(p, &synthetic_rows(p, rows, 40), 0.1);
        let (mut largest, mut squares, mut count) = (0.0f64, 0.0, 0.0);
        with_resamples(
            BootstrapUnit::Comparison,
            p,
            rows,
            |pairs, data, start, refit, newton, _| {
                let converged = refit.refit(start, pairs, data, REFIT_LANES, CHORD_TOL);
                for lane in (0..REFIT_LANES).filter(|&l| converged[l]) {
                    let mut quick = vec![0.0; p];
                    refit.theta_lane(lane, &mut quick);
                    let exact = exact_fit(pairs, data, lane, newton, p);
                    for ((q, e), t) in quick.iter().zip(&exact).zip(&fit.theta) {
                        largest = largest.max((q - e).abs());
                        squares += (e - t) * (e - t);
                        count += 1.0;
                    }
                }
            },
        );
        let spread = (squares / count).sqrt();
        assert!(
            largest < 0.01 * spread,
            "p={p}, {rows} rows: refit error {largest:e} against a spread of {spread:e}"
        );
    }
}
