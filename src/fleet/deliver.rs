//! Probe pods that need no registry: the default way a probe pod starts when no `--probe-image`
//! is given. The container runs from an image the node already holds (`node_image`: its
//! sandbox "pause" image, an image its running containers use, or `--node-image`) with
//! `imagePullPolicy: Never`; pullpath's own static binary reaches the node through the API
//! instead of a registry, and the delivered first stage replaces the image's entrypoint.
//!
//! Per run and per architecture: one ConfigMap holds the first stage (`pullpath-stage`, small,
//! uncompressed: a pause image has only `/pause`, nothing to inflate with), the others hold the
//! zlib-compressed probe binary in parts of at most [`PART_BYTES`] (a ConfigMap's data may hold
//! 1 MiB: `ValidateConfigMap`, `core.MaxSecretSize`). The pod mounts them all read-only as one
//! projected volume at [`BINARY_DIR`]; the stage joins the parts, inflates them into the
//! in-memory volume at [`RUN_DIR`] and executes the probe. The objects hold only the binary,
//! carry the run's labels, are shared by every probe pod of the run and deleted with its pods.
//!
//! Pure functions here (ELF facts, packing, the objects and the pod's
//! volumes); `run` creates and deletes.

pub mod node_image;
pub mod prepare;
pub mod send;

use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::{Value, json};

use super::pod_base::{MANAGED_BY, RUN_LABEL};
use super::undeliverable::{CONFIGMAP_LIMIT, ElfProblem, Undeliverable};

/// One part of the compressed binary: one ConfigMap's whole allowance.
pub const PART_BYTES: usize = CONFIGMAP_LIMIT;
/// The first stage's file name (its ConfigMap key and the second binary target's name).
pub const STAGE: &str = "pullpath-stage";
/// Where the delivered files appear in the pod (a projected volume, read-only).
pub const BINARY_DIR: &str = "/pullpath/delivered";
/// The in-memory volume the stage writes the probe binary into.
pub const RUN_DIR: &str = "/pullpath/run";
/// The delivered ConfigMaps' volume and the in-memory volume.
pub const BINARY_VOLUME: &str = "pullpath-delivered";
pub const RUN_VOLUME: &str = "pullpath-run";
/// The component label of the delivered objects.
pub const COMPONENT: &str = "fleet-binary";

/// What an ELF file header says that matters here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Elf {
    /// The Kubernetes architecture name (`kubernetes.io/arch`), when it is one pullpath knows.
    pub arch: Option<&'static str>,
    /// It names a program interpreter (`PT_INTERP`): it needs a loader and libraries, which a
    /// pause image does not have.
    pub dynamic: bool,
}

/// The ELF facts of `bytes`, or why it is not an ELF executable.
pub fn elf(bytes: &[u8]) -> Result<Elf, ElfProblem> {
    if bytes.get(..4) != Some(b"\x7fELF") {
        return Err(ElfProblem::NotElf);
    }
    let wide = match bytes.get(4) {
        Some(1) => false,
        Some(2) => true,
        _ => return Err(ElfProblem::UnknownClass),
    };
    let little = match bytes.get(5) {
        Some(1) => true,
        Some(2) => false,
        _ => return Err(ElfProblem::UnknownByteOrder),
    };
    let read = |at: usize, len: usize| -> Result<u64, ElfProblem> {
        let field = bytes
            .get(at..at.saturating_add(len))
            .ok_or(ElfProblem::Truncated)?;
        let mut value = 0u64;
        for (i, byte) in field.iter().enumerate() {
            let shift = if little { i } else { len - 1 - i } * 8;
            value |= u64::from(*byte) << shift;
        }
        Ok(value)
    };
    let machine = read(18, 2)?;
    let (phoff, phentsize, phnum) = if wide {
        (read(32, 8)?, read(54, 2)?, read(56, 2)?)
    } else {
        (read(28, 4)?, read(42, 2)?, read(44, 2)?)
    };
    const PT_INTERP: u64 = 3;
    let mut dynamic = false;
    for i in 0..phnum {
        let at = phentsize
            .checked_mul(i)
            .and_then(|offset| offset.checked_add(phoff))
            .and_then(|at| usize::try_from(at).ok())
            .ok_or(ElfProblem::Truncated)?;
        dynamic |= read(at, 4)? == PT_INTERP;
    }
    let arch = match (machine, wide) {
        (62, true) => Some("amd64"),
        (183, true) => Some("arm64"),
        (40, false) => Some("arm"),
        (243, true) => Some("riscv64"),
        (21, true) if little => Some("ppc64le"),
        (22, true) => Some("s390x"),
        (3, false) => Some("386"),
        _ => None,
    };
    Ok(Elf { arch, dynamic })
}

/// The first stage built for this binary's target by build.rs, behind its marker and length.
#[used]
static EMBEDDED_STAGE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/pullpath-stage"));

/// The first stage a pullpath binary carries (this one's or another architecture's): the
/// bytes after the marker build.rs wrote, when its length fits and they are an ELF file.
pub fn embedded_stage(binary: &[u8]) -> Option<&[u8]> {
    // Built at run time, so that this search key is not itself a match in the binary.
    let marker = [&b"PULLPATH-"[..], b"STAGE:"].concat();
    let mut from = 0;
    while let Some(found) = binary[from..]
        .windows(marker.len())
        .position(|w| w == marker.as_slice())
    {
        let at = from + found + marker.len();
        let len = binary
            .get(at..at + 8)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(u64::from_le_bytes)
            .and_then(|l| usize::try_from(l).ok());
        if let Some(stage) = len.and_then(|len| binary.get(at + 8..at + 8 + len))
            && stage.starts_with(b"\x7fELF")
        {
            return Some(stage);
        }
        from = at;
    }
    None
}

/// Whether this pullpath was built with its first stage (build.rs could build it).
pub fn has_stage() -> bool {
    EMBEDDED_STAGE.len() > 8 + 15
}

/// One architecture's binaries as read from disk: the probe and its first stage.
#[derive(Debug, Clone)]
pub struct Binaries {
    pub arch: String,
    pub probe: Vec<u8>,
    pub stage: Vec<u8>,
}

/// A pullpath binary for `arch` read from `bytes` (its own path in `shown`): static, of that
/// architecture, carrying its first stage; or why it cannot be delivered.
pub fn binaries(arch: &str, bytes: Vec<u8>, shown: &str) -> Result<Binaries, Undeliverable> {
    let shown = shown.to_string();
    let facts = elf(&bytes).map_err(|problem| Undeliverable::NotExecutable {
        shown: shown.clone(),
        problem,
    })?;
    if facts.arch != Some(arch) {
        return Err(Undeliverable::OtherArch {
            shown,
            built_for: facts.arch,
            wanted: arch.to_string(),
        });
    }
    if facts.dynamic {
        return Err(Undeliverable::Dynamic { shown });
    }
    let stage = embedded_stage(&bytes)
        .ok_or(Undeliverable::NoStage { shown })?
        .to_vec();
    Ok(Binaries {
        arch: arch.to_string(),
        probe: bytes,
        stage,
    })
}

/// One architecture's delivery: the stage as is, the probe compressed and cut into parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payload {
    pub arch: String,
    pub stage: Vec<u8>,
    pub parts: Vec<Vec<u8>>,
    /// The probe binary's own size (what the stage checks after inflating).
    pub size: usize,
    /// The probe binary's SHA-256, lowercase hex (what the stage checks before it executes it,
    /// and what an administrator pins in the admission policy).
    pub sha256: String,
}

/// Compress the probe (zlib level 6: within 1% of level 9 on pullpath, four times faster) and cut it into parts; the stage must fit one
/// ConfigMap as it is.
pub fn pack(binaries: &Binaries) -> Result<Payload, Undeliverable> {
    if binaries.stage.len() > CONFIGMAP_LIMIT {
        return Err(Undeliverable::StageTooLarge {
            arch: binaries.arch.clone(),
            bytes: binaries.stage.len(),
        });
    }
    let compressed = miniz_oxide::deflate::compress_to_vec_zlib(&binaries.probe, 6);
    Ok(Payload {
        arch: binaries.arch.clone(),
        stage: binaries.stage.clone(),
        parts: compressed.chunks(PART_BYTES).map(<[u8]>::to_vec).collect(),
        size: binaries.probe.len(),
        sha256: sha256_hex(&binaries.probe),
    })
}

/// `bytes`' SHA-256 as lowercase hex, as `sha256sum` prints it and the stage reads it.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    crate::image_ref::hex(&sha2::Sha256::digest(bytes))
}

/// `part-IIII-of-NNNN`: the name the stage orders parts by.
pub fn part_key(index: usize, total: usize) -> String {
    format!("part-{index:04}-of-{total:04}")
}

/// The ConfigMaps of one payload, in creation order (the stage first), each `(name, key,
/// bytes)`.
pub fn objects<'a>(run_id: &str, payload: &'a Payload) -> Vec<(String, String, &'a [u8])> {
    let base = format!("pullpath-{run_id}-{}", payload.arch);
    let total = payload.parts.len();
    std::iter::once((
        format!("{base}-stage"),
        STAGE.to_string(),
        &payload.stage[..],
    ))
    .chain(
        payload
            .parts
            .iter()
            .enumerate()
            .map(|(i, part)| (format!("{base}-{i}"), part_key(i, total), &part[..])),
    )
    .collect()
}

/// One delivered ConfigMap: immutable, labelled with the run, only the binary's bytes.
pub fn config_map(run_id: &str, namespace: &str, name: &str, key: &str, bytes: &[u8]) -> ConfigMap {
    use base64::Engine;
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    let object = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                MANAGED_BY.0: MANAGED_BY.1,
                "app.kubernetes.io/name": "pullpath",
                "app.kubernetes.io/component": COMPONENT,
                RUN_LABEL: run_id,
            },
        },
        "immutable": true,
        "binaryData": {key: data},
    });
    // Only ConfigMap fields of the right types: deserializing cannot fail.
    serde_json::from_value(object).expect("a ConfigMap")
}

/// What a probe pod needs to start from delivered files: the volumes and the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivered {
    /// The image the node holds (`imagePullPolicy: Never`).
    pub node_image: String,
    /// Why that image.
    pub node_image_source: node_image::Source,
    /// The ConfigMaps of the node's architecture with the key each holds (stage first).
    pub config_maps: Vec<(String, String)>,
    /// The probe binary's size.
    pub size: usize,
    /// The probe binary's SHA-256 (lowercase hex): the stage runs nothing else.
    pub sha256: String,
}

/// The pod's volumes for a delivered start: every ConfigMap projected into one read-only
/// directory (files mode 0555: the stage is executed from it), and a memory-backed emptyDir
/// for the inflated binary (counted against the container's memory limit).
pub fn volumes(delivered: &Delivered) -> Vec<Value> {
    let sources: Vec<Value> = delivered
        .config_maps
        .iter()
        .map(|(name, key)| json!({"configMap": {"name": name, "items": [{"key": key, "path": key}]}}))
        .collect();
    vec![
        json!({"name": BINARY_VOLUME, "projected": {"defaultMode": 0o555, "sources": sources}}),
        json!({"name": RUN_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": "128Mi"}}),
    ]
}

/// The container's command for a delivered start: the stage, where to write the binary, its
/// size, its SHA-256 and its parts in order, then the probe's own arguments.
pub fn command(delivered: &Delivered, probe_args: &[String]) -> (Vec<String>, Vec<String>) {
    let command = vec![format!("{BINARY_DIR}/{STAGE}")];
    let mut args = vec![
        format!("{RUN_DIR}/pullpath"),
        delivered.size.to_string(),
        delivered.sha256.clone(),
    ];
    args.extend(
        delivered
            .config_maps
            .iter()
            .filter(|(_, key)| key != STAGE)
            .map(|(_, key)| format!("{BINARY_DIR}/{key}")),
    );
    args.push("--".to_string());
    args.extend(probe_args.iter().cloned());
    (command, args)
}

/// The stage's inflate, tested here against what pullpath compresses.
#[cfg(test)]
#[path = "../../stage/inflate.rs"]
mod stage_inflate;

/// The stage's SHA-256, tested here against the `sha2` crate.
#[cfg(test)]
#[path = "../../stage/sha256.rs"]
mod stage_sha256;

#[cfg(test)]
mod tests {
    use super::*;

    /// A 64-bit little-endian ELF header for `machine` with one program header of `ptype`.
    fn elf64(machine: u16, ptype: u32) -> Vec<u8> {
        let mut bytes = vec![0u8; 64 + 56];
        bytes[..4].copy_from_slice(b"\x7fELF");
        bytes[4] = 2;
        bytes[5] = 1;
        bytes[18..20].copy_from_slice(&machine.to_le_bytes());
        bytes[32..40].copy_from_slice(&64u64.to_le_bytes());
        bytes[54..56].copy_from_slice(&56u16.to_le_bytes());
        bytes[56..58].copy_from_slice(&1u16.to_le_bytes());
        bytes[64..68].copy_from_slice(&ptype.to_le_bytes());
        bytes
    }

    #[test]
    fn elf_headers_give_the_architecture_and_whether_a_loader_is_needed() {
        assert_eq!(
            elf(&elf64(62, 1)),
            Ok(Elf {
                arch: Some("amd64"),
                dynamic: false
            })
        );
        assert_eq!(
            elf(&elf64(183, 3)),
            Ok(Elf {
                arch: Some("arm64"),
                dynamic: true
            })
        );
        assert_eq!(elf(&elf64(9999, 1)).map(|e| e.arch), Ok(None));
        assert!(elf(b"#!/bin/sh\n").is_err());
        let mut truncated = elf64(62, 1);
        truncated.truncate(66);
        assert!(elf(&truncated).is_err(), "a header pointing past the end");
    }

    #[test]
    fn this_test_binary_is_read_as_the_machine_it_runs_on() {
        let own = std::fs::read(std::env::current_exe().expect("exe")).expect("read");
        let facts = elf(&own).expect("an ELF file");
        let expected = match std::env::consts::ARCH {
            "x86_64" => Some("amd64"),
            "aarch64" => Some("arm64"),
            _ => facts.arch,
        };
        assert_eq!(facts.arch, expected);
    }

    #[test]
    fn the_probe_is_compressed_and_cut_under_the_configmap_limit_and_inflates_back() {
        // Bytes that compress poorly: more than one part.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let probe: Vec<u8> = (0..(PART_BYTES + PART_BYTES / 2))
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        let payload = pack(&Binaries {
            arch: "amd64".into(),
            probe: probe.clone(),
            stage: vec![1; 1000],
        })
        .expect("packed");
        assert_eq!(payload.parts.len(), 2);
        assert!(payload.parts.iter().all(|p| p.len() <= CONFIGMAP_LIMIT));
        let joined: Vec<u8> = payload.parts.concat();
        let back = miniz_oxide::inflate::decompress_to_vec_zlib(&joined).expect("inflates");
        assert_eq!(back, probe);
        let objects = objects("ab12", &payload);
        let names: Vec<(&str, &str)> = objects
            .iter()
            .map(|(n, k, _)| (n.as_str(), k.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("pullpath-ab12-amd64-stage", STAGE),
                ("pullpath-ab12-amd64-0", "part-0000-of-0002"),
                ("pullpath-ab12-amd64-1", "part-0001-of-0002"),
            ]
        );
        let too_big = pack(&Binaries {
            arch: "amd64".into(),
            probe: vec![],
            stage: vec![0; CONFIGMAP_LIMIT + 1],
        });
        assert_eq!(
            too_big.map(|p| p.size),
            Err(Undeliverable::StageTooLarge {
                arch: "amd64".into(),
                bytes: CONFIGMAP_LIMIT + 1
            })
        );
    }

    use super::stage_inflate;

    #[test]
    fn the_stages_inflate_reads_what_pullpath_compresses() {
        let text: Vec<u8> = (0..200_000u32)
            .flat_map(|i| format!("line {i} of the probe {}\n", i % 7).into_bytes())
            .collect();
        for data in [text, Vec::new(), vec![7u8; 70_000]] {
            for level in [0, 1, 6, 9] {
                let z = miniz_oxide::deflate::compress_to_vec_zlib(&data, level);
                let mut out = vec![0u8; data.len()];
                assert_eq!(
                    stage_inflate::zlib(&z, &mut out),
                    Ok(data.len()),
                    "level {level}"
                );
                assert_eq!(out, data);
                if !data.is_empty() {
                    let mut short = vec![0u8; data.len() - 1];
                    assert_eq!(
                        stage_inflate::zlib(&z, &mut short),
                        Err(stage_inflate::Error::TooLong)
                    );
                    assert_eq!(
                        stage_inflate::zlib(&z[..z.len() - 1], &mut out),
                        Err(stage_inflate::Error::Truncated)
                    );
                }
            }
        }
        assert_eq!(stage_inflate::adler32(b"Wikipedia"), 0x11E6_0398);
        // A damaged byte: a broken stream, or the checksum differs.
        let data = b"the probe binary ".repeat(10_000);
        let mut z = miniz_oxide::deflate::compress_to_vec_zlib(&data, 9);
        let middle = z.len() / 2;
        z[middle] ^= 0x10;
        let mut out = vec![0u8; data.len()];
        assert!(stage_inflate::zlib(&z, &mut out).is_err());
    }

    #[test]
    fn the_stage_is_found_in_a_binary_behind_its_marker() {
        let mut binary = b"code PULLPATH-STAGE: not this one".to_vec();
        binary.extend_from_slice(b"PULLPATH-STAGE:");
        binary.extend_from_slice(&7u64.to_le_bytes());
        binary.extend_from_slice(b"\x7fELFstg rest");
        assert_eq!(embedded_stage(&binary), Some(&b"\x7fELFstg"[..]));
        assert_eq!(embedded_stage(b"no marker"), None);
        // This test binary carries the stage build.rs made, a static ELF of its own machine.
        let own = std::fs::read(std::env::current_exe().expect("exe")).expect("read");
        if has_stage() {
            let stage = embedded_stage(&own).expect("the embedded stage");
            let facts = elf(stage).expect("an ELF stage");
            assert!(!facts.dynamic, "the stage needs no loader");
            // Small enough for the admission policy to hold it byte for byte (no C library).
            assert!(stage.len() < 64 * 1024, "{} bytes", stage.len());
        }
    }

    #[test]
    fn the_stages_sha256_is_the_standards() {
        use sha2::Digest;
        // Lengths around the padding's one-or-two-block edge (55, 56, 63, 64) and several blocks.
        for len in [0usize, 1, 55, 56, 57, 63, 64, 65, 119, 120, 1000, 4096 + 7] {
            let data: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
            let expected: [u8; 32] = sha2::Sha256::digest(&data).into();
            assert_eq!(stage_sha256::digest(&data), expected, "{len} bytes");
            let hex = sha256_hex(&data);
            assert!(
                stage_sha256::matches_hex(&expected, hex.as_bytes()),
                "{hex}"
            );
        }
        let digest = stage_sha256::digest(b"abc");
        let hex = sha256_hex(b"abc");
        assert_eq!(
            hex,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(!stage_sha256::matches_hex(
            &digest,
            hex.to_uppercase().as_bytes()
        ));
        assert!(!stage_sha256::matches_hex(&digest, &hex.as_bytes()[..63]));
        assert!(!stage_sha256::matches_hex(
            &digest,
            "0".repeat(64).as_bytes()
        ));
    }

    /// The embedded stage itself, run as a probe pod runs it: the binary it assembles runs only
    /// when its SHA-256 is the pinned one, and with no environment.
    #[test]
    fn the_stage_runs_only_the_binary_its_arguments_pin_with_no_environment() {
        use std::os::unix::fs::PermissionsExt;
        use std::process::Command;
        if !has_stage() {
            return;
        }
        let dir = std::env::temp_dir().join(format!("pullpath-stage-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let stage_path = dir.join(STAGE);
        std::fs::write(&stage_path, &EMBEDDED_STAGE[8 + 15..]).expect("stage");
        std::fs::set_permissions(&stage_path, std::fs::Permissions::from_mode(0o755))
            .expect("mode");
        let probe = b"#!/bin/sh\necho \"args=$* pinned=${PINNED-unset}\"\n".to_vec();
        let compressed = miniz_oxide::deflate::compress_to_vec_zlib(&probe, 6);
        let (first, second) = compressed.split_at(compressed.len() / 2);
        std::fs::write(dir.join("part-0000-of-0002"), first).expect("part");
        std::fs::write(dir.join("part-0001-of-0002"), second).expect("part");
        let run = |out: &str, sha256: &str| {
            Command::new(&stage_path)
                .arg(dir.join(out))
                .arg(probe.len().to_string())
                .arg(sha256)
                .arg(dir.join("part-0000-of-0002"))
                .arg(dir.join("part-0001-of-0002"))
                .args(["--", "probe", "r.example/app:v1"])
                .env("PINNED", "from the image")
                .output()
                .expect("the stage runs")
        };
        let pinned = run("pinned", &sha256_hex(&probe));
        assert!(pinned.status.success(), "{pinned:?}");
        assert_eq!(
            String::from_utf8_lossy(&pinned.stdout),
            "args=probe r.example/app:v1 pinned=unset\n"
        );
        let other = run("other", &sha256_hex(b"another binary"));
        assert_eq!(other.status.code(), Some(70), "{other:?}");
        assert!(
            String::from_utf8_lossy(&other.stderr).contains("not the one pinned"),
            "{other:?}"
        );
        assert!(
            !dir.join("other").exists(),
            "nothing written when the digest differs"
        );
        std::fs::remove_dir_all(&dir).expect("clean");
    }

    #[test]
    fn a_delivered_object_holds_only_the_binary_and_the_runs_labels() {
        let map = config_map(
            "ab12",
            "pullpath",
            "pullpath-ab12-amd64-0",
            "part-0000-of-0001",
            b"\x78\x9c",
        );
        let labels = map.metadata.labels.clone().expect("labels");
        assert_eq!(labels[RUN_LABEL], "ab12");
        assert_eq!(labels[MANAGED_BY.0], MANAGED_BY.1);
        assert_eq!(map.immutable, Some(true));
        assert!(map.data.is_none());
        let data = map.binary_data.expect("binaryData");
        assert_eq!(data.len(), 1);
        assert_eq!(data["part-0000-of-0001"].0, b"\x78\x9c");
    }
}
