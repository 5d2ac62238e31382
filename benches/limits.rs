//! `cargo bench --bench limits`: the machine's ceilings for a verified pull — SHA-256 on one
//! core and on all cores, and loopback TCP bandwidth. Prints one line per limit as
//! `name MB/s` (bench/pull.sh reads them). `PULLPATH_BENCH_QUICK=1` uses small sizes.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Instant;

use sha2::{Digest, Sha256};

fn main() {
    let quick = std::env::var_os("PULLPATH_BENCH_QUICK").is_some();
    let size: usize = if quick { 32 << 20 } else { 512 << 20 };
    let data: Vec<u8> = (0..size)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761) as u8)
        .collect();

    let started = Instant::now();
    let digest = Sha256::digest(&data);
    let one = size as f64 / started.elapsed().as_secs_f64() / 1e6;
    std::hint::black_box(digest);

    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = size / cores;
    let started = Instant::now();
    std::thread::scope(|scope| {
        for part in data.chunks(chunk.max(1)) {
            scope.spawn(move || std::hint::black_box(Sha256::digest(part)));
        }
    });
    let all = size as f64 / started.elapsed().as_secs_f64() / 1e6;

    // Loopback only: a listener on 127.0.0.1 and a client in this process.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let address = listener.local_addr().expect("address");
    let total = size * 2;
    let sender = std::thread::spawn(move || {
        let (mut socket, _) = listener.accept().expect("accept");
        let block = vec![7u8; 1 << 20];
        let mut sent = 0;
        while sent < total {
            let n = block.len().min(total - sent);
            socket.write_all(&block[..n]).expect("send");
            sent += n;
        }
    });
    let mut client = TcpStream::connect(address).expect("connect");
    let mut buffer = vec![0u8; 1 << 20];
    let started = Instant::now();
    let mut received = 0;
    while received < total {
        let n = client.read(&mut buffer).expect("receive");
        if n == 0 {
            break;
        }
        received += n;
    }
    let loopback = received as f64 / started.elapsed().as_secs_f64() / 1e6;
    sender.join().expect("sender");

    println!("sha256-1-core {one:.0}");
    println!("sha256-{cores}-cores {all:.0}");
    println!("loopback-tcp {loopback:.0}");
}
