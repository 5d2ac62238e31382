//! Hostile and broken text never panics or hangs `explain`: real messages, mutated thousands of
//! ways by a seeded generator (the stable-toolchain sibling of fuzz/fuzz_targets/explain.rs).

use pullpath::failure_text::explain;

/// xorshift64*: deterministic, so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const TOKENS: [&str; 14] = [
    "\"",
    ": ",
    "\\\"",
    "[",
    "]",
    ", rpc error: ",
    "lookup ",
    " on ",
    "https://",
    "\n",
    "\u{0}",
    "é",
    "Get \"",
    "msg=\"",
];

fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for _ in 0..=rng.below(6) {
        let at = rng.below(bytes.len() + 1);
        match rng.below(5) {
            0 => bytes.truncate(at),
            1 => bytes
                .splice(at..at, TOKENS[rng.below(TOKENS.len())].bytes())
                .for_each(drop),
            2 if !bytes.is_empty() => {
                let i = rng.below(bytes.len());
                bytes[i] = rng.next() as u8;
            }
            3 => {
                let copy = bytes[at..].to_vec();
                bytes.extend_from_slice(&copy);
            }
            _ => bytes
                .drain(at.min(bytes.len())..(at + rng.below(40)).min(bytes.len()))
                .for_each(drop),
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[test]
fn mutated_real_messages_always_get_an_answer() {
    let corpus = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/corpus/real-pull-failures.jsonl"
    ))
    .expect("corpus");
    let seeds: Vec<String> = corpus
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["text"].as_str().map(String::from))
        .collect();
    let mut rng = Rng(0x5EED_CAFE_F00D_BEEF);
    for round in 0..6000 {
        let seed = &seeds[round % seeds.len()];
        let input = mutate(&mut rng, seed);
        let explanation = explain(&input);
        if !input.trim().is_empty() {
            assert!(explanation.verdict().is_some(), "no verdict for {input:?}");
        }
    }
}

#[test]
fn pathological_shapes() {
    for input in [
        "\"".repeat(100_000),
        ": ".repeat(100_000),
        "[rpc error: ".repeat(10_000),
        "Get https://".repeat(20_000),
        "lookup  on :53: ".repeat(10_000),
        "msg=\"\\".repeat(10_000),
        ", rpc error: x".repeat(5_000),
    ] {
        assert!(explain(&input).verdict().is_some());
    }
}
