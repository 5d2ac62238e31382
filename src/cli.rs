//! The command line, raw: clap definitions only. `commands` turns them into work.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};

/// `--request-timeout`: Go's duration syntax, as kubectl reads it.
pub mod go_duration;

/// `--version`: the crate's version and the git commit it was built from (see build.rs).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("PULLPATH_GIT_COMMIT"),
    ")"
);

/// The file name kubectl's plugin mechanism finds on PATH for `kubectl pullpath`.
pub const KUBECTL_PLUGIN: &str = "kubectl-pullpath";

/// Why can't this Kubernetes node pull this image?
#[derive(Debug, Parser)]
#[command(
    name = "pullpath",
    version = VERSION,
    about,
    long_about = None,
    max_term_width = 100,
    after_help = "Exit status: 0 passed, 3 undecided, 10 dns, 11 route, 12 refused, 13 tls, 14 auth, \
15 forbidden, 16 notfound, 17 platform, 18 ratelimit, 19 proxy, 20 blob, 21 other; 64 usage \
error, 66 a kubeconfig, pod or namespace named is not there, 69 the API server cannot be \
reached or fails, 70 internal error, 77 the API server refused (401, 403), 78 the kubeconfig \
cannot be used, or fleet --dry-run can plan no probe pod."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per run and matched once: the size of the largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Read failure text and name the layer, hop, host and owner.
    ///
    /// Accepts an event message, `kubectl describe pod` output, `kubectl get events -o json`,
    /// `kubectl get pod -o json|yaml` or a runtime log: as arguments, from a file, or on stdin.
    /// `pullpath explain pod/NAME` (or deploy/, statefulset/, daemonset/, job/) reads the pod,
    /// its events, its node and pull secrets from the Kubernetes API instead.
    Explain(ExplainArgs),
    /// Every pod waiting on an image in a namespace (or all), from the Kubernetes API, grouped
    /// by layer, host and node pool, worst first.
    Scan(ScanArgs),
    /// Walk the pull path of IMAGE from this network namespace, hop by hop.
    ///
    /// Run it where the node's runtime runs: on the node, or in a hostNetwork pod with the
    /// node's `/` mounted read-only and `--host-root` naming it (deploy/probe-pod.yaml: /host).
    /// From an ordinary pod the answer speaks for the pod, not the node.
    Probe(ProbeArgs),
    /// Print a shell completion script to stdout.
    ///
    /// bash: `pullpath completions bash > /etc/bash_completion.d/pullpath`;
    /// zsh: `pullpath completions zsh > "${fpath[1]}/_pullpath"`;
    /// fish: `pullpath completions fish > ~/.config/fish/completions/pullpath.fish`.
    Completions(CompletionsArgs),
    /// Print the man page (roff) to stdout, or write one page per command into a directory.
    ///
    /// `pullpath man | man -l -` reads it now; `pullpath man --dir /usr/local/share/man/man1` installs it.
    Man(ManArgs),
    /// Say which route, peering flag, DNS link or rule stops each node pool's pull from ACR.
    ///
    /// Offline, from Azure's own exports: `commands` prints the read-only `az` commands that
    /// write the export directory, `analyse` reads it (docs/azure.md).
    Azure(AzureArgs),
    /// Probe IMAGE from the newest node of every pool and compare: short-lived hostNetwork pods
    /// pinned to each chosen node, the node's `/` mounted read-only, deleted when the run ends.
    ///
    /// --fresh-node also probes from a node the autoscaler makes for the run. Needs
    /// deploy/rbac-fleet.yaml and a probe namespace at Pod Security level `privileged`
    /// (deploy/namespace.yaml). Shows which nodes only work from cache or by hand fix. Exit
    /// status: the worst eligible pool's layer.
    Fleet(FleetArgs),
}

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write pullpath.1 and a page per command (pullpath-probe.1, …) into this directory.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// How the user typed the command, for help and usage: `kubectl pullpath` when kubectl runs
/// this binary as its plugin (it executes `kubectl-pullpath` with that path as argv[0]).
pub fn invoked_as(argv0: Option<&OsStr>) -> &'static str {
    let file_name = argv0.and_then(|a| Path::new(a).file_name());
    if file_name == Some(OsStr::new(KUBECTL_PLUGIN)) {
        "kubectl pullpath"
    } else {
        "pullpath"
    }
}

/// The clap command, its help and usage naming it `name` (see [`invoked_as`]).
pub fn command_named(name: &'static str) -> clap::Command {
    // clap writes a usage line unwrapped: the one with three required flags is split to fit
    // 80 columns.
    let azure_commands = format!(
        "{name} azure commands --cluster <NAME> --resource-group <RG>\n       --registry <ACR> [--out <DIR>]"
    );
    Cli::command()
        .bin_name(name)
        .display_name(name)
        .mut_subcommand("azure", |azure| {
            azure.mut_subcommand("commands", |c| c.override_usage(azure_commands))
        })
}

/// Parse a command line (argv[0] first), help and usage naming it as it was invoked.
pub fn try_parse_from(args: impl IntoIterator<Item = OsString>) -> Result<Cli, clap::Error> {
    let args: Vec<OsString> = args.into_iter().collect();
    let mut command = command_named(invoked_as(args.first().map(OsString::as_os_str)));
    let matches = command.try_get_matches_from_mut(args)?;
    Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut command))
}

#[derive(Debug, clap::Args)]
pub struct AzureArgs {
    #[command(subcommand)]
    pub command: AzureCommand,
}

#[derive(Debug, Subcommand)]
pub enum AzureCommand {
    /// Print the read-only `az` commands (a bash script) that write the export directory.
    Commands(AzureCommandsArgs),
    /// For every node pool and every endpoint of the pull, name the first failing step.
    #[command(alias = "analyze")]
    Analyse(AzureAnalyseArgs),
}

#[derive(Debug, clap::Args)]
pub struct AzureCommandsArgs {
    /// The AKS cluster's name.
    #[arg(long, value_name = "NAME")]
    pub cluster: String,
    /// The cluster's resource group.
    #[arg(short = 'g', long = "resource-group", value_name = "RG")]
    pub resource_group: String,
    /// The container registry's name (`contosoreg`, not the login server).
    #[arg(long, value_name = "ACR")]
    pub registry: String,
    /// The directory the commands write to.
    #[arg(long, value_name = "DIR", default_value = "pullpath-azure")]
    pub out: String,
}

#[derive(Debug, clap::Args)]
pub struct AzureAnalyseArgs {
    /// The export directory `pullpath azure commands` wrote.
    pub dir: PathBuf,
    /// Analyse only this node pool.
    #[arg(long, value_name = "POOL")]
    pub pool: Option<String>,
    #[arg(short, long, value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

#[derive(Debug, clap::Args)]
pub struct ProbeArgs {
    /// The image, as the pod spec names it (`nginx`, `registry.example.test/team/app:v1`, `…@sha256:…`).
    pub image: String,
    /// Download every layer in full and verify its size and sha256.
    #[arg(long)]
    pub full: bool,
    /// The platform to select from an index (default: this machine's, e.g. linux/amd64).
    #[arg(long, value_name = "OS/ARCH[/VARIANT]")]
    pub platform: Option<String>,
    /// Registry user name; the password is read from stdin (`--password-stdin`).
    #[arg(long, requires = "password_stdin")]
    pub username: Option<String>,
    /// Read the password for `--username` from stdin.
    #[arg(long, requires = "username")]
    pub password_stdin: bool,
    /// One of the pod's imagePullSecrets: a docker config.json or a Kubernetes dockerconfigjson
    /// Secret (JSON). Repeatable; tried before the node's own credentials, as the kubelet does.
    #[arg(long, value_name = "FILE", conflicts_with = "username")]
    pub docker_config: Vec<PathBuf>,
    /// The kubelet's `--root-dir`, where it looks first for the node's `config.json` (default:
    /// the running kubelet's, else /var/lib/kubelet).
    #[arg(long, value_name = "DIR")]
    pub kubelet_root_dir: Option<PathBuf>,
    /// The kubelet's `CredentialProviderConfig`, a file or a directory of them (default: the
    /// running kubelet's flag).
    #[arg(long, value_name = "PATH")]
    pub image_credential_provider_config: Option<PathBuf>,
    /// The kubelet's credential provider plugin directory (default: the running kubelet's flag).
    #[arg(long, value_name = "DIR")]
    pub image_credential_provider_bin_dir: Option<PathBuf>,
    /// containerd's config.toml, whose deprecated `registry.configs."HOST".auth` the CRI uses
    /// only when the kubelet sends no credential.
    /// (Default: the running containerd's `--config`, else `/etc/containerd/config.toml`; a node
    /// path.)
    #[arg(long, value_name = "FILE")]
    pub containerd_config: Option<PathBuf>,
    /// The running kubelet's pid, whose command line gives the flags above and whose
    /// environment its plugins inherit (default: the process named kubelet).
    #[arg(long, value_name = "PID")]
    pub kubelet_pid: Option<u32>,
    /// How long a credential provider plugin may run (the kubelet allows one minute).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    pub credential_provider_timeout: Duration,
    /// An extra CA certificate (PEM) to trust, beside the system store and containerd's certs.d.
    #[arg(long = "ca-file", value_name = "PEM")]
    pub ca_files: Vec<PathBuf>,
    /// containerd's registry hosts directories (`config_path`, `:`-separated), instead of what
    /// its config.toml says (or its version's default when it says nothing).
    #[arg(long, value_name = "DIR[:DIR…]")]
    pub containerd_certs: Option<String>,
    /// Where resolv.conf and hosts are read from (a node path).
    #[arg(long, value_name = "DIR", default_value = "/etc", hide = true)]
    pub etc: PathBuf,
    /// Where the node's root filesystem is mounted (`/host` in a probe pod): every node path —
    /// resolv.conf, hosts, containerd's config and hosts.toml, systemd units, the kubelet's
    /// files and plugins, the trust store — is read inside it, its symlinks resolved there, and
    /// credential plugins run chrooted into it. Default: this machine is the node.
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub host_root: PathBuf,
    /// The runtime's HTTPS proxy, instead of the one its environment has (`HTTPS_PROXY`).
    #[arg(long, value_name = "URL")]
    pub https_proxy: Option<String>,
    /// The runtime's HTTP proxy, instead of its environment's (`HTTP_PROXY`).
    #[arg(long, value_name = "URL")]
    pub http_proxy: Option<String>,
    /// The runtime's NO_PROXY list, instead of its environment's.
    #[arg(long, value_name = "LIST")]
    pub no_proxy: Option<String>,
    /// Where containerd's systemd unit and its drop-ins live, read for `Environment=` lines
    /// (repeatable; default: /etc/systemd/system, /run/systemd/system, /lib/systemd/system).
    #[arg(long = "systemd-dir", value_name = "DIR")]
    pub systemd_dirs: Vec<PathBuf>,
    /// The running containerd's pid, whose environment (/proc/PID/environ) is the runtime's
    /// proxy configuration (default: the process named containerd).
    #[arg(long, value_name = "PID")]
    pub runtime_pid: Option<u32>,
    /// The runtime's CRI socket, asked for its version (`unix://` optional), as crictl's flag.
    /// Where containerd's versions read hosts.toml differently, that version's rules are used.
    /// (Default: the running kubelet's `--container-runtime-endpoint`, else its config file's
    /// `containerRuntimeEndpoint`, else `unix:///run/containerd/containerd.sock`; a node path.)
    #[arg(long, value_name = "SOCKET")]
    pub runtime_endpoint: Option<String>,
    /// The node's containerd version (e.g. `1.7.24`), instead of asking its CRI socket.
    #[arg(long, value_name = "VERSION")]
    pub containerd_version: Option<String>,
    /// Also ask the runtime on `--runtime-endpoint` to pull the image over CRI, as the kubelet
    /// does, and report its answer beside the probe's (an image the node did not hold is
    /// removed again). Writes to the node's image store: opt-in.
    #[arg(long)]
    pub runtime_pull: bool,
    /// Per-query DNS timeout.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = parse_duration)]
    pub dns_timeout: Duration,
    /// TCP connect timeout (all addresses are tried at once).
    #[arg(long, value_name = "DURATION", default_value = "3s", value_parser = parse_duration)]
    pub connect_timeout: Duration,
    /// TLS handshake timeout.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration)]
    pub tls_timeout: Duration,
    /// Time to wait for response headers, and the longest silence inside a body.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub http_timeout: Duration,
    /// The whole probe's deadline.
    #[arg(long, value_name = "DURATION", default_value = "120s", value_parser = parse_duration)]
    pub deadline: Duration,
    /// Layers downloaded at once with --full [default: as many as the node's containerd does:
    /// its config.toml's `max_concurrent_downloads`, 3 unless set].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub parallel: Option<u16>,
    #[arg(short, long, value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

/// Why a duration flag's value is refused; clap prints it after the flag's name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadDuration {
    #[error("{text:?} is not a duration (try 500ms, 3s, 2m)")]
    NotANumber { text: String },
    #[error("unknown unit {unit:?} in {text:?} (ms, s, m)")]
    UnknownUnit { text: String, unit: String },
    #[error("{text:?} is out of range (1ms to 60m)")]
    OutOfRange { text: String },
}

/// `500ms`, `3s`, `2m`, or plain seconds.
pub fn parse_duration(text: &str) -> Result<Duration, BadDuration> {
    let text = text.trim();
    let (number, unit) = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .map_or((text, "s"), |i| text.split_at(i));
    let value: f64 = number.parse().map_err(|_| BadDuration::NotANumber {
        text: text.to_string(),
    })?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        _ => {
            return Err(BadDuration::UnknownUnit {
                text: text.to_string(),
                unit: unit.to_string(),
            });
        }
    };
    if !(0.001..=3600.0).contains(&seconds) {
        return Err(BadDuration::OutOfRange {
            text: text.to_string(),
        });
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// How to reach the cluster, as kubectl spells it: the same flags, forms and defaults (but
/// `--request-timeout`'s, which is 20s: a diagnosis should end).
#[derive(Debug, Clone, clap::Args)]
pub struct KubeArgs {
    /// The kubeconfig file (default: KUBECONFIG, a list of files; then ~/.kube/config; then the
    /// in-cluster service account).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use.
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// The kubeconfig cluster to use, instead of the context's.
    #[arg(long, value_name = "NAME")]
    pub cluster: Option<String>,
    /// The kubeconfig user to use, instead of the context's.
    #[arg(long, value_name = "NAME")]
    pub user: Option<String>,
    /// The user to impersonate (a user name or a service account,
    /// `system:serviceaccount:NS:NAME`).
    #[arg(long = "as", value_name = "USER")]
    pub as_user: Option<String>,
    /// A group to impersonate (repeatable); needs --as.
    #[arg(long = "as-group", value_name = "GROUP", requires = "as_user")]
    pub as_groups: Vec<String>,
    /// The UID to impersonate; needs --as.
    #[arg(long = "as-uid", value_name = "UID", requires = "as_user")]
    pub as_uid: Option<String>,
    /// The namespace (default: the context's).
    #[arg(short = 'n', long, value_name = "NS")]
    pub namespace: Option<String>,
    /// Read the pull secrets to see which registries they hold (RBAC `get secrets`; no value is
    /// ever printed).
    #[arg(long)]
    pub read_secrets: bool,
    /// How long one API request may take, as kubectl reads it: a Go duration (`30s`, `1m30s`,
    /// `1h`), a bare number of seconds, or 0 for no limit.
    #[arg(long, value_name = "DURATION", default_value = "20s", value_parser = go_duration::parse_request_timeout)]
    pub request_timeout: Duration,
}

#[derive(Debug, clap::Args)]
pub struct ScanArgs {
    #[command(flatten)]
    pub kube: KubeArgs,
    /// Every namespace.
    #[arg(short = 'A', long, conflicts_with = "namespace")]
    pub all_namespaces: bool,
    #[arg(short, long, value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

#[derive(Debug, clap::Args)]
pub struct ExplainArgs {
    /// The failure text (several arguments are joined by spaces), or `pod/NAME` (`po/`,
    /// `deploy/`, `statefulset/`, `daemonset/`, `job/`) to read it from the cluster. Reads
    /// stdin when absent.
    pub text: Vec<String>,
    #[command(flatten)]
    pub kube: KubeArgs,
    /// Read the failure text from this file (`-` for stdin).
    #[arg(short = 'f', long = "file", conflicts_with = "text")]
    pub file: Option<PathBuf>,
    #[arg(short, long, value_enum, default_value_t = Output::Text)]
    pub output: Output,
    /// With `pod/NAME` (or a workload): then check the failing image from the nodes themselves,
    /// as `pullpath fleet IMAGE --for pod/NAME` does (the node the pod landed on and the newest
    /// node of every pool; see `fleet --help` for its RBAC).
    #[arg(long)]
    pub probe: bool,
    /// With --probe: the probe image (as `fleet --probe-image`). Without it no registry is
    /// needed: pullpath is delivered through the API onto each node's sandbox image.
    #[arg(long, value_name = "IMAGE", requires = "probe")]
    pub probe_image: Option<String>,
    /// With --probe and no --probe-image: the image every probed node holds to start the
    /// probe from (as `fleet --node-image`).
    #[arg(
        long,
        value_name = "IMAGE",
        requires = "probe",
        conflicts_with = "probe_image"
    )]
    pub node_image: Option<String>,
    /// With --probe and no --probe-image: the static pullpath to deliver to nodes of ARCH (as
    /// `fleet --probe-binary`; repeatable).
    #[arg(
        long,
        value_name = "ARCH=PATH",
        requires = "probe",
        conflicts_with = "probe_image"
    )]
    pub probe_binary: Vec<String>,
    /// With --probe: each node's own runtime pulls the image beside the probe, and the two
    /// answers are compared (as `fleet --runtime-pull`).
    #[arg(long, requires = "probe")]
    pub runtime_pull: bool,
    /// With --probe: the namespace the probe pods run in (as `fleet --probe-namespace`).
    #[arg(
        long,
        value_name = "NS",
        requires = "probe",
        default_value = "pullpath"
    )]
    pub probe_namespace: String,
    /// With --probe: also have each node's kubelet pull the image with the pod's own service
    /// account and pull secrets (as `fleet --kubelet-pull`; the image stays in the node's cache).
    #[arg(long, requires = "probe")]
    pub kubelet_pull: bool,
}

#[derive(Debug, clap::Args)]
pub struct FleetArgs {
    /// The image, as the pod spec names it. Not needed with --cleanup.
    #[arg(required_unless_present = "cleanup")]
    pub image: Option<String>,
    #[command(flatten)]
    pub kube: KubeArgs,
    /// The namespace the probe pods run in (Pod Security level `privileged`).
    #[arg(long, value_name = "NS", default_value = "pullpath")]
    pub probe_namespace: String,
    /// A probe image to pull instead of delivering pullpath through the API: scripts/image.sh
    /// builds it; push it where every node pulls from, best the image's own registry (a probe
    /// image from another registry that does not pull is a run problem naming that registry).
    /// Without it, no registry is needed: each probe pod starts from the node's own sandbox
    /// (pause) image with pullpath's static binary delivered as ConfigMaps in the probe
    /// namespace, deleted with the run.
    #[arg(long, value_name = "IMAGE")]
    pub probe_image: Option<String>,
    /// Without --probe-image: the image every probed node holds to start the probe from
    /// (`imagePullPolicy: Never`), instead of each node's sandbox image from its status.
    #[arg(long, value_name = "IMAGE", conflicts_with = "probe_image")]
    pub node_image: Option<String>,
    /// Without --probe-image: the static pullpath to deliver to nodes of ARCH
    /// (`arm64=/path/pullpath`; repeatable). Without it, this executable, when it is static, for
    /// its own architecture.
    #[arg(long, value_name = "ARCH=PATH", conflicts_with = "probe_image")]
    pub probe_binary: Vec<String>,
    /// The architectures the probe image has (`amd64,arm64`): a chosen node of another
    /// (`kubernetes.io/arch`) gets no probe pod and is a run problem. Unknown without it.
    #[arg(long, value_name = "ARCH,…", value_delimiter = ',')]
    pub probe_image_arch: Vec<String>,
    #[command(flatten)]
    pub run: FleetRunArgs,
    /// Print the probe pods as a `List` (JSON, for `kubectl apply -f -`) instead of creating
    /// them: read-only, nothing is created.
    #[arg(long, conflicts_with = "cleanup")]
    pub dry_run: bool,
    /// Delete every probe pod and ConfigMap pullpath left in the probe namespace (label
    /// app.kubernetes.io/managed-by=pullpath) and the --kubelet-pull pods it left in workload
    /// namespaces, then exit.
    #[arg(long, conflicts_with_all = ["for_workload", "all_nodes", "pools", "selector", "full", "runtime_pull"])]
    pub cleanup: bool,
    #[arg(short, long, value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

/// A fleet run's scope and pace: the workload, which nodes, what each probe checks, fresh nodes,
/// parallelism and deadlines. `explain OBJECT --probe` runs fleet with this group as fleet
/// defines it, setting only --for, --runtime-pull and --kubelet-pull.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct FleetRunArgs {
    /// The workload whose nodeSelector, required node affinity and tolerations decide which
    /// pools are eligible (`pod/NAME`, `deploy/NAME`, `sts/`, `ds/`, `job/`, in -n's namespace).
    /// With `pod/NAME`, the node it landed on is probed too.
    #[arg(long = "for", value_name = "KIND/NAME")]
    pub for_workload: Option<String>,
    /// Probe the N newest Ready nodes of each pool.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub nodes_per_pool: u16,
    /// Probe every Ready node.
    #[arg(long)]
    pub all_nodes: bool,
    /// Only these pools (comma-separated): a pool's name, or LABEL=NAME, which also names a
    /// node group at zero (no node carries the label yet) for --fresh-node to probe.
    #[arg(long, value_name = "POOL,…", value_delimiter = ',')]
    pub pools: Vec<String>,
    /// Only nodes matching this label selector (as `kubectl get nodes -l`).
    #[arg(short = 'l', long, value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Download every layer in full on each node (`probe --full`): the check that counts.
    #[arg(long)]
    pub full: bool,
    /// Also ask each node's runtime to pull over CRI, as the kubelet does (`probe
    /// --runtime-pull`, on the node's own socket), both answers side by side. An image a node
    /// did not hold is removed again. Writes to the nodes: opt-in.
    #[arg(long)]
    pub runtime_pull: bool,
    /// Also have each node's kubelet pull the image itself, as the workload would: after each
    /// probe pod, a pod in the workload's namespace (-n) with its service account and pull
    /// secrets (--for), pinned to the node, `imagePullPolicy: Always`, no host access, whose
    /// command never runs. Its answer sits beside the probe's. The image stays in the node's
    /// cache afterwards: opt-in.
    #[arg(long)]
    pub kubelet_pull: bool,
    /// Also probe each chosen pool from a node its autoscaler creates for the run: a probe pod
    /// not pinned to a node, asking for the pool, excluding every node that exists now
    /// (cluster-autoscaler, Karpenter, AKS node auto-provisioning add one). It costs a node
    /// for some minutes (the autoscaler removes it once empty, about 10 minutes by default);
    /// asks first unless --yes. Its verdict sits beside the pool's newest node's.
    #[arg(long)]
    pub fresh_node: bool,
    /// With --fresh-node: how long to wait for the fresh node.
    #[arg(long, value_name = "DURATION", default_value = "15m", value_parser = parse_duration, requires = "fresh_node")]
    pub fresh_node_timeout: Duration,
    /// With --fresh-node: do not ask before the autoscaler adds nodes (for scripts).
    #[arg(long, requires = "fresh_node")]
    pub yes: bool,
    /// Probe pods running at once.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..=500))]
    pub parallel: u16,
    /// The whole run's deadline (every wave of pod starts and probes).
    #[arg(long, value_name = "DURATION", default_value = "300s", value_parser = parse_duration)]
    pub deadline: Duration,
    /// Each probe's own deadline, counted from its pod's start (its activeDeadlineSeconds); no
    /// more than --deadline. A wave that would start with less of --deadline left is not
    /// started (a run problem).
    #[arg(long, value_name = "DURATION", default_value = "120s", value_parser = parse_duration)]
    pub probe_deadline: Duration,
    /// How long a probe pod may take to start (admission, mounts, the probe image's pull) before
    /// it is named as never started.
    #[arg(long, value_name = "DURATION", default_value = "120s", value_parser = parse_duration)]
    pub start_budget: Duration,
    /// How often a running probe pod's phase is read.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration, hide = true)]
    pub poll_interval: Duration,
}

impl FleetRunArgs {
    /// The group with no flag given: each value is its flag's default, from the definitions
    /// above (an error only if a definition's default does not parse).
    pub fn defaults() -> Result<Self, clap::Error> {
        let command = Self::augment_args(clap::Command::new("fleet").no_binary_name(true));
        let matches = command.try_get_matches_from(std::iter::empty::<OsString>())?;
        Self::from_arg_matches(&matches)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// For people.
    Text,
    /// The versioned report (docs/report-schema.md).
    Json,
    /// The same report as YAML.
    Yaml,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(matches!(
            parse_duration("0s"),
            Err(BadDuration::OutOfRange { text }) if text == "0s"
        ));
        assert!(matches!(
            parse_duration("3h"),
            Err(BadDuration::UnknownUnit { unit, .. }) if unit == "h"
        ));
        assert!(matches!(
            parse_duration("fast"),
            Err(BadDuration::NotANumber { text }) if text == "fast"
        ));
    }

    #[test]
    fn the_cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn named_as_a_kubectl_plugin_only_by_the_plugin_file_name() {
        let name = |argv0: &str| invoked_as(Some(OsStr::new(argv0)));
        assert_eq!(
            name("/home/me/.krew/bin/kubectl-pullpath"),
            "kubectl pullpath"
        );
        assert_eq!(name("kubectl-pullpath"), "kubectl pullpath");
        assert_eq!(name("/usr/local/bin/pullpath"), "pullpath");
        assert_eq!(name("kubectl-pullpath-old"), "pullpath");
        assert_eq!(invoked_as(None), "pullpath");
    }

    #[test]
    fn usage_names_the_command_as_invoked() {
        let usage = |argv0: &str| {
            let args = [argv0, "probe"].map(OsString::from);
            try_parse_from(args)
                .expect_err("IMAGE is required")
                .to_string()
        };
        assert!(usage("/x/kubectl-pullpath").contains("kubectl pullpath probe <IMAGE>"));
        let plain = usage("/x/pullpath");
        assert!(plain.contains("pullpath probe <IMAGE>"));
        assert!(!plain.contains("kubectl"), "{plain}");
    }
}
