//! The export directory: which file holds what, the read-only `az` command that produces it,
//! and reading it without trusting it. The layout is an interface (docs/azure.md); `commands`
//! prints these commands and `analyse` names them when a file is missing.
//!
//! Reading never panics: a missing file, a file too large, bad UTF-8 or bad JSON becomes a
//! [`FileState`](crate::azure::exports::FileState) naming the file and the command, and the analysis says what it could not
//! conclude without it.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::shape;
pub use unreadable::Unreadable;

mod unreadable;

/// No Azure list export of one subscription comes near this; larger files are refused unread.
pub const MAX_FILE: u64 = 64 * 1024 * 1024;

/// One kind of export in the directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Export {
    Aks,
    NodePools,
    Vnets,
    RouteTables,
    Nsgs,
    PrivateEndpoints,
    PrivateDnsZones,
    PrivateDnsLinks,
    PrivateDnsRecords,
    Acr,
    AcrEndpoints,
    VnetGateways,
    LocalGateways,
    EffectiveRoutes,
    EffectiveNsg,
    Endpoints,
}

impl Export {
    pub const ALL: [Export; 16] = [
        Export::Aks,
        Export::NodePools,
        Export::Vnets,
        Export::RouteTables,
        Export::Nsgs,
        Export::PrivateEndpoints,
        Export::PrivateDnsZones,
        Export::PrivateDnsLinks,
        Export::PrivateDnsRecords,
        Export::Acr,
        Export::AcrEndpoints,
        Export::VnetGateways,
        Export::LocalGateways,
        Export::EffectiveRoutes,
        Export::EffectiveNsg,
        Export::Endpoints,
    ];

    /// The path inside the directory; `<zone>` and `<nic>` stand for one file per zone or NIC.
    pub fn file(self) -> &'static str {
        match self {
            Export::Aks => "aks.json",
            Export::NodePools => "nodepools.json",
            Export::Vnets => "vnets.json",
            Export::RouteTables => "route-tables.json",
            Export::Nsgs => "nsgs.json",
            Export::PrivateEndpoints => "private-endpoints.json",
            Export::PrivateDnsZones => "private-dns-zones.json",
            Export::PrivateDnsLinks => "private-dns-links/<zone>.json",
            Export::PrivateDnsRecords => "private-dns-records/<zone>.json",
            Export::Acr => "acr.json",
            Export::AcrEndpoints => "acr-endpoints.json",
            Export::VnetGateways => "vnet-gateways.json",
            Export::LocalGateways => "local-gateways.json",
            Export::EffectiveRoutes => "effective-routes/<nic>.json",
            Export::EffectiveNsg => "effective-nsg/<nic>.json",
            Export::Endpoints => "endpoints.json",
        }
    }

    /// The folder of a one-file-per-item export.
    pub fn folder(self) -> Option<&'static str> {
        self.file().split_once('/').map(|(folder, _)| folder)
    }

    /// The read-only command that writes this file, with `$CLUSTER`, `$RG`, `$ACR`, `$NODE_RG`,
    /// `$OUT`, `$ZONE_RG`, `$ZONE_NAME` and `$NIC_ID` as shell variables (set by `pullpath azure
    /// commands`). Every command is a `show` or `list`: nothing here changes Azure.
    pub fn command(self) -> &'static str {
        match self {
            Export::Aks => "az aks show -g \"$RG\" -n \"$CLUSTER\" -o json > \"$OUT/aks.json\"",
            Export::NodePools => {
                "az aks nodepool list -g \"$RG\" --cluster-name \"$CLUSTER\" -o json > \"$OUT/nodepools.json\""
            }
            Export::Vnets => "az network vnet list -o json > \"$OUT/vnets.json\"",
            Export::RouteTables => {
                "az network route-table list -o json > \"$OUT/route-tables.json\""
            }
            Export::Nsgs => "az network nsg list -o json > \"$OUT/nsgs.json\"",
            Export::PrivateEndpoints => {
                "az network private-endpoint list -o json > \"$OUT/private-endpoints.json\""
            }
            Export::PrivateDnsZones => {
                "az network private-dns zone list -o json > \"$OUT/private-dns-zones.json\""
            }
            Export::PrivateDnsLinks => {
                "az network private-dns link vnet list -g \"$ZONE_RG\" -z \"$ZONE_NAME\" -o json > \"$OUT/private-dns-links/$ZONE_NAME.json\""
            }
            Export::PrivateDnsRecords => {
                "az network private-dns record-set a list -g \"$ZONE_RG\" -z \"$ZONE_NAME\" -o json > \"$OUT/private-dns-records/$ZONE_NAME.json\""
            }
            Export::Acr => "az acr show -n \"$ACR\" -o json > \"$OUT/acr.json\"",
            Export::AcrEndpoints => {
                "az acr show-endpoints -n \"$ACR\" -o json > \"$OUT/acr-endpoints.json\""
            }
            Export::VnetGateways => {
                "az network vnet-gateway show --ids $(az resource list --resource-type Microsoft.Network/virtualNetworkGateways --query '[].id' -o tsv) -o json > \"$OUT/vnet-gateways.json\""
            }
            Export::LocalGateways => {
                "az network local-gateway show --ids $(az resource list --resource-type Microsoft.Network/localNetworkGateways --query '[].id' -o tsv) -o json > \"$OUT/local-gateways.json\""
            }
            Export::EffectiveRoutes => {
                "az network nic show-effective-route-table --ids \"$NIC_ID\" -o json > \"$OUT/effective-routes/$NIC.json\""
            }
            Export::EffectiveNsg => {
                "az network nic list-effective-nsg --ids \"$NIC_ID\" -o json > \"$OUT/effective-nsg/$NIC.json\""
            }
            Export::Endpoints => {
                "(written by hand) [{\"host\": \"mirror.corp.example\", \"address\": \"192.168.20.10\"}] > \"$OUT/endpoints.json\""
            }
        }
    }

    /// Optional exports: the analysis works without them (reconstructing routes from route
    /// tables, or having no endpoint outside Azure).
    pub fn optional(self) -> bool {
        matches!(
            self,
            Export::EffectiveRoutes | Export::EffectiveNsg | Export::Endpoints | Export::NodePools
        )
    }
}

/// What became of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileState {
    Read,
    Missing,
    /// Present but not usable; the reason names the problem, never the content.
    Unreadable(Unreadable),
}

/// One file the analysis looked for.
#[derive(Debug, Clone)]
pub struct FileStatus {
    /// Relative to the directory (`private-dns-links/privatelink.azurecr.io.json`).
    pub file: String,
    pub export: Export,
    pub state: FileState,
}

impl FileStatus {
    /// The command that produces this file, with the zone or NIC filled in.
    pub fn command(&self) -> String {
        let stem = Path::new(&self.file)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("");
        let command = self.export.command();
        match self.export {
            Export::PrivateDnsLinks | Export::PrivateDnsRecords => {
                command.replace("$ZONE_NAME", stem)
            }
            Export::EffectiveRoutes | Export::EffectiveNsg => {
                command.replace("$NIC.", &format!("{stem}."))
            }
            _ => command.to_string(),
        }
    }
}

/// The directory as read: every document that parsed, and the state of every file looked for.
#[derive(Debug, Default)]
pub struct Exports {
    pub dir: PathBuf,
    pub files: Vec<FileStatus>,
    documents: BTreeMap<String, Value>,
}

/// Why the directory itself could not be read (a usage error, not a finding).
#[derive(Debug, thiserror::Error)]
#[error("{dir}: {reason}")]
pub struct DirError {
    pub dir: String,
    pub reason: String,
}

impl Exports {
    /// Read every file of the layout that is there; per-zone files are expected for every zone
    /// `private-dns-zones.json` lists.
    pub fn load(dir: &Path) -> Result<Exports, DirError> {
        if !dir.is_dir() {
            return Err(DirError {
                dir: dir.display().to_string(),
                reason: "not a directory of exports (run `pullpath azure commands` to make one)"
                    .into(),
            });
        }
        Ok(Exports::gather(
            dir,
            |folder| json_files(&dir.join(folder)),
            |file| read_bytes(&dir.join(file)),
        ))
    }

    /// The same reading as [`Exports::load`] over files already in memory (path relative to
    /// the directory → its bytes), with no filesystem: the fuzz target's entry (`fuzz/`), so
    /// every input reaches the same checks a directory's files do.
    pub fn from_texts(dir: &Path, texts: &BTreeMap<String, Vec<u8>>) -> Exports {
        Exports::gather(
            dir,
            |folder| {
                let mut names: Vec<String> = texts
                    .keys()
                    .filter_map(|path| path.strip_prefix(folder)?.strip_prefix('/'))
                    .filter(|name| name.ends_with(".json") && !name.contains('/'))
                    .map(str::to_string)
                    .collect();
                names.sort();
                names
            },
            |file| Ok(texts.get(file).cloned()),
        )
    }

    /// Every file of the layout: `list` names a folder's `.json` files, `fetch` a file's bytes.
    fn gather(
        dir: &Path,
        list: impl Fn(&str) -> Vec<String>,
        fetch: impl Fn(&str) -> Result<Option<Vec<u8>>, Unreadable>,
    ) -> Exports {
        let mut exports = Exports {
            dir: dir.to_path_buf(),
            ..Exports::default()
        };
        let mut read = |export: Export, file: String| {
            let state = match fetch(&file).and_then(|bytes| bytes.map(parse_json).transpose()) {
                Ok(Some(value)) => {
                    exports.documents.insert(file.to_ascii_lowercase(), value);
                    FileState::Read
                }
                Ok(None) => FileState::Missing,
                Err(reason) => FileState::Unreadable(reason),
            };
            exports.files.push(FileStatus {
                file,
                export,
                state,
            });
        };
        for export in Export::ALL {
            match export.folder() {
                None => read(export, export.file().to_string()),
                Some(folder) => {
                    for file in list(folder) {
                        read(export, format!("{folder}/{file}"));
                    }
                }
            }
        }
        let zones: Vec<String> = exports
            .get(Export::PrivateDnsZones.file())
            .map(shape::entries)
            .unwrap_or_default()
            .iter()
            .filter_map(|z| shape::text(z, "name"))
            .map(str::to_string)
            .collect();
        for zone in zones {
            for export in [Export::PrivateDnsLinks, Export::PrivateDnsRecords] {
                let file = zone_file(export, &zone);
                if !exports
                    .files
                    .iter()
                    .any(|f| f.file.eq_ignore_ascii_case(&file))
                {
                    exports.files.push(FileStatus {
                        file,
                        export,
                        state: FileState::Missing,
                    });
                }
            }
        }
        exports
    }

    /// A parsed document by its relative path (case-insensitive).
    pub fn get(&self, file: &str) -> Option<&Value> {
        self.documents.get(&file.to_ascii_lowercase())
    }

    /// Every parsed document of a one-file-per-item export, with its file stem.
    pub fn each(&self, export: Export) -> Vec<(String, &Value)> {
        let Some(folder) = export.folder() else {
            return Vec::new();
        };
        self.files
            .iter()
            .filter(|f| f.export == export && f.state == FileState::Read)
            .filter_map(|f| {
                let stem = f.file.strip_prefix(folder)?.trim_start_matches('/');
                let stem = stem.strip_suffix(".json").unwrap_or(stem).to_string();
                Some((stem, self.get(&f.file)?))
            })
            .collect()
    }

    /// The status of one file, if it was looked for.
    pub fn status(&self, file: &str) -> Option<&FileStatus> {
        self.files
            .iter()
            .find(|f| f.file.eq_ignore_ascii_case(file))
    }
}

/// The per-zone file of a zone.
pub fn zone_file(export: Export, zone: &str) -> String {
    format!("{}/{zone}.json", export.folder().unwrap_or(""))
}

fn json_files(folder: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    names
}

/// `Ok(None)` when absent; `Err` names what is wrong with the file without quoting it.
fn read_bytes(path: &Path) -> Result<Option<Vec<u8>>, Unreadable> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Unreadable::Open(e.into())),
    };
    let mut bytes = Vec::new();
    file.take(MAX_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Unreadable::Read(e.into()))?;
    Ok(Some(bytes))
}

/// A file's bytes → its document; `Err` names what is wrong without quoting it.
fn parse_json(bytes: Vec<u8>) -> Result<Value, Unreadable> {
    if bytes.len() as u64 > MAX_FILE {
        return Err(Unreadable::TooLarge);
    }
    // `az` on Windows may write a byte-order mark.
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(Unreadable::Empty);
    }
    serde_json::from_slice(body).map_err(|e| Unreadable::NotJson(e.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_command_is_read_only() {
        for export in Export::ALL {
            let command = export.command();
            for verb in [" create", " update", " delete", " set ", " add "] {
                assert!(!command.contains(verb), "{command}");
            }
            assert!(
                command.contains(
                    &export
                        .file()
                        .replace("<zone>", "$ZONE_NAME")
                        .replace("<nic>", "$NIC")
                ),
                "{command} writes {}",
                export.file()
            );
        }
    }

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("pullpath-exports-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        dir
    }

    #[test]
    fn oversized_and_deeply_nested_files_are_refused_with_a_reason() {
        let dir = scratch("limits");
        let big = std::fs::File::create(dir.join("vnets.json")).expect("create");
        // Sparse: the size is there without writing 64 MiB.
        big.set_len(MAX_FILE + 1).expect("set_len");
        std::fs::write(dir.join("nsgs.json"), "[".repeat(100_000)).expect("write");
        let exports = Exports::load(&dir).expect("a directory");
        let state = |file: &str| exports.status(file).map(|s| s.state.clone());
        assert_eq!(
            state("vnets.json"),
            Some(FileState::Unreadable(Unreadable::TooLarge))
        );
        assert!(
            matches!(
                state("nsgs.json"),
                Some(FileState::Unreadable(Unreadable::NotJson(_)))
            ),
            "serde_json's recursion limit, not a stack overflow"
        );
        assert_eq!(state("acr.json"), Some(FileState::Missing));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn texts_in_memory_read_as_the_directory_reads() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/azure/healthy");
        let mut texts = BTreeMap::new();
        for export in Export::ALL {
            let files = match export.folder() {
                None => vec![export.file().to_string()],
                Some(folder) => json_files(&dir.join(folder))
                    .into_iter()
                    .map(|f| format!("{folder}/{f}"))
                    .collect(),
            };
            for file in files {
                if let Ok(bytes) = std::fs::read(dir.join(&file)) {
                    texts.insert(file, bytes);
                }
            }
        }
        texts.insert("nsgs.json".into(), b"  ".to_vec());
        let from_disk = Exports::load(&dir).expect("a directory");
        let in_memory = Exports::from_texts(&dir, &texts);
        let states = |e: &Exports| {
            e.files
                .iter()
                .map(|f| (f.file.clone(), f.state.clone()))
                .collect::<Vec<_>>()
        };
        let mut expected = states(&from_disk);
        for (file, state) in &mut expected {
            if file == "nsgs.json" {
                *state = FileState::Unreadable(Unreadable::Empty);
            }
        }
        assert_eq!(states(&in_memory), expected);
        assert_eq!(in_memory.get("vnets.json"), from_disk.get("vnets.json"));
    }

    #[test]
    fn a_file_named_in_a_message_carries_its_own_command() {
        let status = FileStatus {
            file: "private-dns-links/privatelink.azurecr.io.json".into(),
            export: Export::PrivateDnsLinks,
            state: FileState::Missing,
        };
        assert!(
            status
                .command()
                .contains("-z \"privatelink.azurecr.io\" -o json > \"$OUT/private-dns-links/privatelink.azurecr.io.json\"")
        );
    }
}
