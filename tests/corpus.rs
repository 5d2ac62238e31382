//! `explain` against real failure messages people pasted (tests/fixtures/corpus, a copy of
//! shared/corpus), scored on the whole corpus and, separately, on a held-out slice.
//!
//! The held-out slice ([`HELD_OUT`]) was fixed by id before any rule for the 83 rows new in the
//! 136-row corpus was written: every new row (id ≥ 3000) whose id is divisible by 3. Rules are
//! written from the other rows only, so the held-out figure measures how well the rules
//! generalise to messages they were not written from. This test prints only the held-out
//! slice's totals, never its texts, so that tuning to it cannot happen by accident.
//!
//! Scoring. A row whose `note` starts with `context:` is not decidable from the text: its
//! answer is right when the verdict is undecided with the label first among the candidates.
//! Every other row is text-decidable: its layer is right when the verdict names the label.
//! Host names compare without case, and host is scored twice: on every row, and on the rows
//! whose text names the labelled host (or whose label names none), since some labels came from
//! the thread rather than the text. The test asserts a floor per figure (what the rules
//! reached, so no change may lower it; at or above the target where the rules meet
//! it) and prints each figure against the target.

use std::collections::BTreeMap;

use pullpath::failure_text::{Diagnosis, explain};
use serde::Deserialize;

/// New rows (id ≥ 3000) whose id is divisible by 3; fixed before rule-writing began.
const HELD_OUT: [u32; 25] = [
    3003, 3006, 3009, 3012, 3015, 3018, 3021, 3030, 3033, 3039, 3048, 3051, 3066, 3075, 3081, 3087,
    3090, 3096, 3099, 3114, 3123, 3135, 3138, 3153, 3159,
];

#[derive(Deserialize)]
struct Row {
    id: u32,
    text: String,
    layer: String,
    hop: String,
    host: String,
    runtime: String,
    note: String,
}

impl Row {
    fn needs_context(&self) -> bool {
        self.note.starts_with("context:")
    }

    /// Whether the text itself names the labelled host (or the label names none). Where it
    /// does not, the label came from the thread (`hub.foobar.com` behind a bare `unexpected
    /// EOF`), and no reading of the text can find it without guessing.
    fn names_its_host(&self) -> bool {
        self.host.is_empty() || self.text.to_lowercase().contains(&self.host.to_lowercase())
    }
}

fn rows() -> Vec<Row> {
    rows_of("real-pull-failures.jsonl")
}

fn rows_of(file: &str) -> Vec<Row> {
    let path = format!(
        "{}/tests/fixtures/corpus/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path)
        .expect("corpus file")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("corpus row"))
        .collect()
}

/// What one row's verdict got right.
struct Score {
    layer: bool,
    hop: bool,
    host: bool,
    runtime: bool,
    /// Undecided on a row the text decides.
    undecided_needlessly: bool,
    got: String,
}

fn score(row: &Row, verdict: &Diagnosis) -> Score {
    let layer = verdict.layer.as_str();
    let undecided = verdict.ambiguity.is_some();
    let layer_ok = if row.needs_context() {
        undecided && layer == row.layer
    } else {
        layer == row.layer
    };
    Score {
        layer: layer_ok,
        hop: verdict.hop.as_str() == row.hop,
        // Host names compare without case, as DNS compares them (`REDACTED.dkr.ecr…`).
        host: verdict
            .host
            .as_deref()
            .unwrap_or("")
            .eq_ignore_ascii_case(&row.host),
        runtime: verdict.runtime.as_str() == row.runtime,
        undecided_needlessly: undecided && !row.needs_context(),
        got: format!(
            "{}{}/{}/{}/{}",
            if undecided { "undecided:" } else { "" },
            layer,
            verdict.hop,
            verdict.host.as_deref().unwrap_or(""),
            verdict.runtime.as_str()
        ),
    }
}

/// Counts over a set of rows.
#[derive(Default)]
struct Tally {
    rows: usize,
    decidable: usize,
    layer_decidable: usize,
    context: usize,
    layer_context: usize,
    hop: usize,
    host: usize,
    /// Rows whose text names the labelled host, and how many of those got it.
    host_named: usize,
    host_named_right: usize,
    runtime: usize,
    undecided_needlessly: usize,
}

impl Tally {
    fn add(&mut self, row: &Row, s: &Score) {
        self.rows += 1;
        if row.needs_context() {
            self.context += 1;
            self.layer_context += usize::from(s.layer);
        } else {
            self.decidable += 1;
            self.layer_decidable += usize::from(s.layer);
        }
        self.hop += usize::from(s.hop);
        self.host += usize::from(s.host);
        if row.names_its_host() {
            self.host_named += 1;
            self.host_named_right += usize::from(s.host);
        }
        self.runtime += usize::from(s.runtime);
        self.undecided_needlessly += usize::from(s.undecided_needlessly);
    }

    fn layer_all(&self) -> usize {
        self.layer_decidable + self.layer_context
    }

    fn line(&self, name: &str) -> String {
        let pct = |k: usize, n: usize| 100.0 * k as f64 / n.max(1) as f64;
        format!(
            "{name}: layer {}/{} decidable ({:.1}%), {}/{} context rows undecided with the label first, \
             {}/{} overall ({:.1}%); hop {}/{n} ({:.1}%), host {}/{n} ({:.1}%) ({}/{} where the text names it), \
             runtime {}/{n} ({:.1}%); undecided where the text decides: {}",
            self.layer_decidable,
            self.decidable,
            pct(self.layer_decidable, self.decidable),
            self.layer_context,
            self.context,
            self.layer_all(),
            self.rows,
            pct(self.layer_all(), self.rows),
            self.hop,
            pct(self.hop, self.rows),
            self.host,
            pct(self.host, self.rows),
            self.host_named_right,
            self.host_named,
            self.runtime,
            pct(self.runtime, self.rows),
            self.undecided_needlessly,
            n = self.rows,
        )
    }
}

/// `k/n ≥ percent`, in integers.
fn at_least(k: usize, n: usize, percent: usize) -> bool {
    k * 100 >= n * percent
}

#[test]
fn held_out_ids_exist_and_are_new_rows() {
    let rows = rows();
    for id in HELD_OUT {
        assert!(
            rows.iter().any(|r| r.id == id),
            "held-out id {id} is not in the corpus"
        );
        assert!(
            id >= 3000 && id % 3 == 0,
            "held-out id {id} breaks the rule"
        );
    }
    let rule: Vec<u32> = rows
        .iter()
        .map(|r| r.id)
        .filter(|&id| id >= 3000 && id % 3 == 0)
        .collect();
    assert_eq!(rule, HELD_OUT, "the slice is exactly the rule's rows");
}

#[test]
fn corpus_accuracy_overall_and_on_the_held_out_slice() {
    let rows = rows();
    let mut confusion: BTreeMap<(String, String), usize> = BTreeMap::new();
    let (mut all, mut held, mut dev) = (Tally::default(), Tally::default(), Tally::default());
    let mut misses = Vec::new();
    for row in &rows {
        let explanation = explain(&row.text);
        let verdict = explanation
            .verdict()
            .expect("every corpus row yields a verdict");
        let s = score(row, verdict);
        all.add(row, &s);
        if HELD_OUT.contains(&row.id) {
            held.add(row, &s);
            continue;
        }
        dev.add(row, &s);
        *confusion
            .entry((row.layer.clone(), verdict.layer.to_string()))
            .or_default() += 1;
        if !(s.layer && s.hop && s.host && s.runtime) || s.undecided_needlessly {
            misses.push(format!(
                "#{} want {}/{}/{}/{}{} got {}: {}",
                row.id,
                row.layer,
                row.hop,
                row.host,
                row.runtime,
                if row.needs_context() {
                    " (context)"
                } else {
                    ""
                },
                s.got,
                row.text.chars().take(200).collect::<String>()
            ));
        }
    }
    println!("development rows, expected -> predicted: count");
    for ((want, got), count) in &confusion {
        let mark = if want == got { " " } else { "!" };
        println!("{mark} {want:>10} -> {got:<10} {count}");
    }
    println!("{}", all.line("whole corpus"));
    println!("{}", dev.line("development rows"));
    println!("{}", held.line("held-out slice"));
    for miss in &misses {
        println!("{miss}");
    }

    // Each figure against the target and against the floor this suite reached; the
    // floor is asserted so that no change makes it worse, and where the rules meet the target
    // the floor is at or above it (layer, hop), so the target itself is asserted. Where a floor
    // sits below its target, the rows in between name no host or runtime in their text (the
    // label came from the thread: a bare `unexpected EOF` labelled `hub.foobar.com`, crictl's
    // socket timeout labelled containerd), or the held-out slice's rows the rules miss: see the
    // development misses printed above. Host is also scored on the rows whose text names the
    // labelled host, the figure a reading of the text can reach without guessing.
    let checks = [
        (
            "layer, text-decidable rows",
            all.layer_decidable,
            all.decidable,
            97,
            97,
        ),
        ("hop", all.hop, all.rows, 95, 99),
        ("host", all.host, all.rows, 95, 84),
        (
            "host, rows whose text names it",
            all.host_named_right,
            all.host_named,
            95,
            95,
        ),
        ("runtime", all.runtime, all.rows, 95, 92),
        (
            "held-out layer, all rows",
            held.layer_all(),
            held.rows,
            93,
            84,
        ),
        (
            "held-out layer, text-decidable rows",
            held.layer_decidable,
            held.decidable,
            93,
            95,
        ),
    ];
    for (name, k, n, target, floor) in checks {
        let status = if at_least(k, n, target) {
            "meets"
        } else {
            "BELOW"
        };
        println!("{name}: {k}/{n} {status} the issue's {target}% (floor {floor}%)");
    }
    for (name, k, n, _, floor) in checks {
        assert!(
            at_least(k, n, floor),
            "{name}: {k}/{n} fell below its floor of {floor}%\n{}\n{}",
            all.line("whole corpus"),
            held.line("held-out slice")
        );
    }
}

/// Floors for one sample, in percent (`None`: not asserted for it).
struct Floors {
    layer_decidable: usize,
    layer_all: Option<usize>,
    hop: usize,
    host_named: usize,
    runtime: usize,
}

/// Score every row of `file` (it must hold `expected` rows), printing each miss when
/// `show_misses`, and assert `floors` on the totals.
fn score_sample(name: &str, file: &str, expected: usize, show_misses: bool, floors: Floors) {
    let rows = rows_of(file);
    assert_eq!(rows.len(), expected, "{file}");
    let mut tally = Tally::default();
    for row in &rows {
        let explanation = explain(&row.text);
        let verdict = explanation
            .verdict()
            .expect("every sample row yields a verdict");
        let s = score(row, verdict);
        tally.add(row, &s);
        if show_misses && !(s.layer && s.hop && s.host && s.runtime) {
            println!(
                "#{} want {}/{}/{}/{} got {}",
                row.id, row.layer, row.hop, row.host, row.runtime, s.got
            );
        }
    }
    println!("{}", tally.line(name));
    let mut checks = vec![
        (
            "layer, text-decidable rows",
            tally.layer_decidable,
            tally.decidable,
            floors.layer_decidable,
        ),
        ("hop", tally.hop, tally.rows, floors.hop),
        (
            "host, rows whose text names it",
            tally.host_named_right,
            tally.host_named,
            floors.host_named,
        ),
        ("runtime", tally.runtime, tally.rows, floors.runtime),
    ];
    if let Some(floor) = floors.layer_all {
        checks.push(("layer, all rows", tally.layer_all(), tally.rows, floor));
    }
    for (what, k, n, floor) in checks {
        assert!(
            at_least(k, n, floor),
            "{name} {what}: {k}/{n} fell below its floor of {floor}%\n{}",
            tally.line(name)
        );
    }
}

/// The project's own second sample (tests/fixtures/corpus/README.md), collected in three
/// batches, each scored once before any rule was written from it, then read for the families it
/// showed (a terminal-wrapped message, an object store's XML error, the Docker Engine API's
/// URL, containerd's resolver log line, a pasted markdown link, a line wrapped at a space, an
/// image named outside a log record's message …). Its floors keep those families; its misses
/// are printed to read, not to tune single rows to.
#[test]
fn the_second_sample_keeps_its_families() {
    score_sample(
        "second sample",
        "fresh-pull-failures.jsonl",
        200,
        true,
        Floors {
            layer_decidable: 97,
            layer_all: Some(92),
            hop: 97,
            host_named: 96,
            runtime: 97,
        },
    );
}

/// A third sample, collected after every rule of this suite was written (2026-12-03, 40
/// messages, tests/fixtures/corpus/README.md) and kept out of rule-writing for good: this test
/// prints its totals only, never a text or a miss, so that nobody tunes to it by accident. It
/// measures what the rules do on messages they have never met; its floors are the figures of
/// its first and only scoring (layer 31/34 text-decidable, 31/40 overall with 0/6 context
/// rows, hop 37/40, host 33/37 where the text names it, runtime 36/40).
#[test]
fn the_held_out_sample_is_scored_without_showing_a_row() {
    score_sample(
        "held-out sample",
        "held-out-pull-failures.jsonl",
        40,
        false,
        Floors {
            layer_decidable: 91,
            layer_all: None,
            hop: 92,
            host_named: 89,
            runtime: 90,
        },
    );
}

/// The fourth batch (issue 28): 84 messages from public threads, none in the samples above,
/// collected on 2026-12-04 and scored once before any rule was written from it
/// (tests/fixtures/corpus/README.md): layer 80/84, hop 82/84. The rules it led to (a proxy
/// named only by its address, Windows' socket messages, a v1 layer path, an ingest the local
/// store lost) brought it to layer 83/84 and hop 84/84. The hop has its own floor beside the
/// layer's (the targets: layer 97%, hop 92%). Its misses are printed to read for
/// families, not to tune single rows to.
#[test]
fn the_fourth_batch_keeps_its_families() {
    score_sample(
        "fourth batch",
        "fourth-batch-pull-failures.jsonl",
        84,
        true,
        Floors {
            layer_decidable: 98,
            layer_all: Some(98),
            hop: 100,
            host_named: 90,
            runtime: 85,
        },
    );
}
