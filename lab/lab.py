#!/usr/bin/env python3
"""pullpath's lab: a Kubernetes node's pull path, built from real servers in network namespaces.

    lab.py up [--no-large]     build the namespaces, PKI, servers and test images (idempotent);
                               --no-large skips the 256 MiB and 512 MiB benchmark images
    lab.py scenario NAME       switch to a scenario of lab/scenarios.toml (resets the baseline first)
    lab.py reset-node NAME     restart a node's containerd with an empty image store
    lab.py status              print the lab's state as JSON
    lab.py fetch-runtimes      fetch containerd 1.7 and 2.1 (PULLPATH_LAB_CONTAINERD=1.7|2.1 runs them)
    lab.py podman-pull IMAGE [USER:PASSWORD]
                               pull with podman in the node's namespace (the second runtime)
    lab.py down                stop everything and remove every trace (test.lock stays while a
                               test or a restart under `flock` holds it)

Topology (every address lives only inside these namespaces; none has a default route, and none
is linked to the root namespace, so nothing can leave the lab):

    pp-node      10.10.1.2  the fresh node: containerd, resolver 10.10.5.2
    pp-oldnode   10.10.7.2  a node that pulled the image earlier (cached-image)
    pp-node2     10.10.10.2 a fresh node of a second pool, in its own subnet (fleet-pools)
    pp-registry  10.10.2.2  Distribution on 443, token auth, redirect middleware
    pp-auth      10.10.3.2  token service (lab/tokend.py) on 443
    pp-blob      10.10.4.2  nginx on 443 serving the registry's storage
    pp-dns       10.10.5.2  dnsmasq, the node resolver; 10.10.5.3 dnsmasq, the cluster resolver
    pp-pod       10.10.6.2  a pod: cluster resolver, its own routes
    pp-mirror    10.10.8.2  a second Distribution as a hosts.toml mirror (cache.example.test),
                            anonymous, on the registry's storage or a copy of it
                 10.10.8.3  nginx relays (relay.example.test, relay-rel.example.test) that
                            redirect blob downloads once more
    (pp-blob's nginx also serves front.example.test, a registry.k8s.io-style front that 307s
     every /v2/ request to the registry, and the blobs over plain HTTP on port 80)
    pp-proxy     10.10.9.2  tinyproxy on 3128: the runtime's HTTPS_PROXY in the proxy scenarios
    pp-al2023    10.10.11.2 an Amazon-Linux-2023-like node (node_image_root): its trust only under
                            /etc/pki behind the /etc/ssl/certs link, containerd's proxy in the
                            EnvironmentFile= of its unit, `config_path` the image's two roots with
                            the registry's hosts.toml (a mirror) in the second; routes to the
                            resolver and the proxy only, so every pull goes through the proxy
    pp-k3s       10.10.12.2 a k3s-like node: no /etc/containerd, containerd started as k3s
                            starts it (-c /var/lib/rancher/k3s/agent/etc/containerd/config.toml
                            -a /run/k3s/containerd/containerd.sock), whose certs.d alone holds
                            the registry's CA; no kubelet process (k3s runs it inside its own)
    pp-router    10.10.N.1  routes between the subnets above, nothing else

Every namespace also has fd00:10:N::2/64 (the router fd00:10:N::1): registry6.example.test has
only an AAAA record, registry46.example.test both an A and an AAAA record.
"""

import base64
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import tomllib

LAB = os.path.dirname(os.path.abspath(__file__))
STATE = os.environ.get("PULLPATH_LAB_STATE", "/var/lib/pullpath-lab")
PKI = os.path.join(STATE, "pki")
LOGS = os.path.join(STATE, "logs")
PIDS = os.path.join(STATE, "pids")
PREFIX = "pp-"

# name -> (subnet number, host address suffixes)
HOSTS = {
    "node": 1,
    "registry": 2,
    "auth": 3,
    "blob": 4,
    "dns": 5,
    "pod": 6,
    "oldnode": 7,
    "mirror": 8,
    "proxy": 9,
    "node2": 10,
    "al2023": 11,
    "k3s": 12,
}
NODES = {"node": "pp-node", "old-node": "pp-oldnode", "node2": "pp-node2", "al2023": "pp-al2023",
         "k3s": "pp-k3s"}
# Nodes laid out as a node image (node_image_root): their containerd sees the image's files at
# their node paths, in a mount namespace of its own; scenarios leave them as they are.
IMAGE_NODES = ("al2023", "k3s")
# Subnets a namespace reaches (every other one when not listed): the AL2023-like node only its
# resolver and the proxy.
ONLY_ROUTES = {"al2023": ("dns", "proxy")}
NODE_RESOLVER = "10.10.5.2"
CLUSTER_RESOLVER = "10.10.5.3"
REGISTRY = "registry.example.test"
REGISTRY_PRIVATE = "registry.privatelink.example.test"
REGISTRY6 = "registry6.example.test"
REGISTRY46 = "registry46.example.test"
AUTH = "auth.example.test"
BLOB = "labstore.blob.example.test"
CACHE = "cache.example.test"
# A name nothing resolves, whose hosts.toml points at the registry (`hosts-toml server-only`).
ALIAS = "alias.example.test"
# Another name for the blob host, which its certificate does not cover.
CACHESTORE = "cachestore.blob.example.test"
FRONT = "front.example.test"
# A registry front that answers every manifest request 429 with a Retry-After (pp-blob's nginx).
LIMITED = "limited.example.test"
RELAY = "relay.example.test"
RELAY_REL = "relay-rel.example.test"
RELAY_ADDRESS = "10.10.8.3"
PROXY_URL = "http://10.10.9.2:3128"
# The same proxy behind TLS (stunnel in front of tinyproxy): an https:// proxy URL.
PROXY_NAME = "proxy.example.test"
TLS_PROXY_URL = f"https://{PROXY_NAME}:3129"
# mitmproxy, re-signing every TLS connection with a CA of its own the node does not trust.
INSPECTING_PROXY_URL = "http://10.10.9.2:8080"
TOOLS = os.environ.get("PULLPATH_TOOLS", "/opt/pullpath-tools")
PROXY_USER, PROXY_PASSWORD = "proxyuser", "proxy-secret"
# Where the registry's redirect middleware sends blob downloads, per scenario.
REDIRECTS = {"labstore": f"https://{BLOB}", "plain": f"http://{BLOB}", "relay": f"https://{RELAY}",
             "relay-rel": f"https://{RELAY_REL}"}
# Names every resolver of the lab knows in the baseline: name -> address (CNAMEs below).
RECORDS = {
    "registry": [(REGISTRY_PRIVATE, "10.10.2.2")],
    "auth": [(AUTH, "10.10.3.2")],
    "blob": [(BLOB, "10.10.4.2")],
    "mirror": [(CACHE, "10.10.8.2")],
    "cachestore": [(CACHESTORE, "10.10.4.2")],
    "front": [(FRONT, "10.10.4.2")],
    "limited": [(LIMITED, "10.10.4.2")],
    "relay": [(RELAY, RELAY_ADDRESS), (RELAY_REL, RELAY_ADDRESS)],
    "proxy": [("proxy.example.test", "10.10.9.2")],
    "v6": [(REGISTRY6, "fd00:10:2::2"), (REGISTRY46, "10.10.2.2,fd00:10:2::2")],
}
CNAMES = {"registry": [(REGISTRY, REGISTRY_PRIVATE)]}
# What public DNS answers for the private name when the private zone is not linked: an address
# (TEST-NET-3) that no lab namespace has a route to, so nothing is ever sent there.
PUBLIC_ADDRESS = "203.0.113.10"


class SetupFailed(Exception):
    """A step of the lab failed; the message names the step and the server, with its log."""


def ns(name: str) -> str:
    return PREFIX + name


def addr(name: str, host: int = 2) -> str:
    return f"10.10.{HOSTS[name]}.{host}"


def addr6(name: str, host: int = 2) -> str:
    return f"fd00:10:{HOSTS[name]}::{host}"


def subnet6(name: str) -> str:
    return f"fd00:10:{HOSTS[name]}::/64"


def run(*cmd, check=True, input=None):
    result = subprocess.run(cmd, capture_output=True, text=True, input=input)
    if check and result.returncode != 0:
        raise SetupFailed(f"command failed: {' '.join(cmd)}\n{result.stderr.strip()}")
    return result


def in_ns(name: str, *cmd, check=True, input=None):
    return run("ip", "netns", "exec", ns(name), *cmd, check=check, input=input)


def log_tail(log: str, lines: int = 30) -> str:
    try:
        with open(log, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except FileNotFoundError:
        return "(no log written)"


# ---------------------------------------------------------------- processes


# The environment systemd gives a service before its unit's own settings (systemd.exec(5)).
SYSTEMD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def start(server: str, namespace: str, *cmd, env: dict = None, service_env: bool = False):
    """Start a server inside a namespace, detached, logging to LOGS/server.log; `env` is added
    to its environment (as a systemd drop-in's Environment= would). With `service_env`, its
    environment is a systemd service's, `env` and systemd's PATH only, nothing of the caller's
    (whose SSL_CERT_FILE, say, would change the trust a Go program loads)."""
    stop(server)
    log = os.path.join(LOGS, f"{server}.log")
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            ["ip", "netns", "exec", namespace, *cmd],
            stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True,
            env={**({"PATH": SYSTEMD_PATH} if service_env else os.environ), **(env or {})},
            cwd="/" if service_env else None,
        )
    with open(os.path.join(PIDS, f"{server}.pid"), "w") as f:
        f.write(str(proc.pid))
    return proc.pid


def pid_of(server: str):
    try:
        with open(os.path.join(PIDS, f"{server}.pid")) as f:
            return int(f.read().strip())
    except (FileNotFoundError, ValueError):
        return None


def alive(pid) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie child of ours counts as dead.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def stop(server: str):
    pid = pid_of(server)
    if alive(pid):
        os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while alive(pid) and time.monotonic() < deadline:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
            time.sleep(0.05)
        if alive(pid):
            os.killpg(pid, signal.SIGKILL)
    try:
        os.remove(os.path.join(PIDS, f"{server}.pid"))
    except FileNotFoundError:
        pass


def wait_listening(server: str, namespace: str, address: str, port: int, proto: str = "tcp", seconds: float = 15):
    """Poll the namespace's socket table until the server listens; fail with its log."""
    flag = "-ltn" if proto == "tcp" else "-lun"
    want = f"{address}:{port}"
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        out = run("ip", "netns", "exec", namespace, "ss", "-H", flag, check=False).stdout
        if any(want in line.split() for line in out.splitlines()):
            return
        if not alive(pid_of(server)):
            break
        time.sleep(0.05)
    log = os.path.join(LOGS, f"{server}.log")
    state = "exited" if not alive(pid_of(server)) else f"did not listen on {want}/{proto} within {seconds}s"
    raise SetupFailed(f"{server} in {namespace} {state}; its log ({log}):\n{log_tail(log)}")


# ---------------------------------------------------------------- network


def netns_exists(name: str) -> bool:
    return os.path.exists(f"/run/netns/{ns(name)}")


def build_network():
    if not netns_exists("router"):
        run("ip", "netns", "add", ns("router"))
    in_ns("router", "ip", "link", "set", "lo", "up")
    in_ns("router", "sysctl", "-qw", "net.ipv4.ip_forward=1")
    in_ns("router", "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1")
    for name in HOSTS:
        if not netns_exists(name):
            run("ip", "netns", "add", ns(name))
        in_ns(name, "ip", "link", "set", "lo", "up")
        have = in_ns(name, "ip", "-o", "link", "show", "eth0", check=False).returncode == 0
        if not have:
            run("ip", "link", "add", "eth0", "netns", ns(name), "type", "veth", "peer", "name", f"to-{name}", "netns", ns("router"))
        in_ns(name, "ip", "addr", "replace", f"{addr(name)}/24", "dev", "eth0")
        if name == "dns":
            in_ns(name, "ip", "addr", "replace", f"{CLUSTER_RESOLVER}/24", "dev", "eth0")
        if name == "mirror":
            in_ns(name, "ip", "addr", "replace", f"{RELAY_ADDRESS}/24", "dev", "eth0")
        in_ns(name, "ip", "-6", "addr", "replace", f"{addr6(name)}/64", "dev", "eth0", "nodad")
        in_ns(name, "ip", "link", "set", "eth0", "up")
        in_ns("router", "ip", "addr", "replace", f"{addr(name, 1)}/24", "dev", f"to-{name}")
        in_ns("router", "ip", "-6", "addr", "replace", f"{addr6(name, 1)}/64", "dev", f"to-{name}", "nodad")
        in_ns("router", "ip", "link", "set", f"to-{name}", "up")
    restore_routes()


def restore_routes():
    """The baseline: every host reaches every other subnet through the router; no default route."""
    for name in HOSTS:
        for other in HOSTS:
            if other != name and other in ONLY_ROUTES.get(name, HOSTS):
                in_ns(name, "ip", "route", "replace", f"10.10.{HOSTS[other]}.0/24", "via", addr(name, 1))
                in_ns(name, "ip", "-6", "route", "replace", subnet6(other), "via", addr6(name, 1))


def nft_reset():
    for name in HOSTS:
        in_ns(name, "nft", "delete", "table", "inet", "pplab", check=False)


def nft_rule(name: str, rule: str):
    script = f"table inet pplab {{\n chain input {{\n  type filter hook input priority 0; policy accept;\n  {rule}\n }}\n}}\n"
    in_ns(name, "nft", "-f", "-", input=script)


# ---------------------------------------------------------------- PKI


def openssl(*args):
    run("openssl", *args)


def make_ca(name: str):
    key, pem = os.path.join(PKI, f"{name}.key"), os.path.join(PKI, f"{name}.pem")
    if not os.path.exists(pem):
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", pem, "-days", "3650",
                "-subj", f"/CN=pullpath lab {name}", "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign,cRLSign")


def make_cert(name: str, ca: str, dns_names: list, expired: bool = False):
    key, pem = os.path.join(PKI, f"{name}.key"), os.path.join(PKI, f"{name}.pem")
    # A certificate is made again when the names it must carry change.
    names_file = os.path.join(PKI, f"{name}.names")
    wanted = ",".join(dns_names)
    current = open(names_file).read() if os.path.exists(names_file) else None
    if os.path.exists(pem) and current == wanted:
        return
    issue_cert(name, ca, dns_names, expired)
    with open(names_file, "w") as f:
        f.write(wanted)


def issue_cert(name: str, ca: str, dns_names: list, expired: bool):
    key, pem = os.path.join(PKI, f"{name}.key"), os.path.join(PKI, f"{name}.pem")
    csr = os.path.join(PKI, f"{name}.csr")
    openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", f"/CN={dns_names[0]}")
    ext = os.path.join(PKI, f"{name}.ext")
    with open(ext, "w") as f:
        f.write("basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n")
        f.write("subjectAltName=" + ",".join(f"DNS:{n}" for n in dns_names) + "\n")
    ca_key, ca_pem = os.path.join(PKI, f"{ca}.key"), os.path.join(PKI, f"{ca}.pem")
    if not expired:
        openssl("x509", "-req", "-in", csr, "-CA", ca_pem, "-CAkey", ca_key, "-CAcreateserial", "-out", pem,
                "-days", "825", "-extfile", ext)
        return
    # `openssl x509` cannot date a certificate in the past; `openssl ca` can.
    db = os.path.join(PKI, "expired-ca")
    os.makedirs(db, exist_ok=True)
    open(os.path.join(db, "index.txt"), "w").close()
    conf = os.path.join(db, "ca.cnf")
    with open(conf, "w") as f:
        f.write(f"""[ca]
default_ca = lab
[lab]
database = {db}/index.txt
new_certs_dir = {db}
serial = {db}/serial
default_md = sha256
policy = any
copy_extensions = none
[any]
commonName = supplied
""")
    with open(os.path.join(db, "serial"), "w") as f:
        f.write("1000\n")
    openssl("ca", "-batch", "-config", conf, "-cert", ca_pem, "-keyfile", ca_key, "-in", csr, "-out", pem,
            "-startdate", "20200101000000Z", "-enddate", "20210101000000Z", "-extfile", ext, "-notext")


def build_pki():
    os.makedirs(PKI, exist_ok=True)
    make_ca("ca")
    make_ca("rogue-ca")
    make_cert("registry", "ca", [REGISTRY, REGISTRY_PRIVATE, REGISTRY6, REGISTRY46])
    make_cert("registry-wrong-name", "ca", ["other.example.test"])
    make_cert("registry-expired", "ca", [REGISTRY, REGISTRY_PRIVATE], expired=True)
    make_cert("registry-unknown-ca", "rogue-ca", [REGISTRY, REGISTRY_PRIVATE])
    make_cert("auth", "ca", [AUTH])
    make_cert("blob", "ca", [BLOB])
    make_cert("cache", "ca", [CACHE])
    make_cert("front", "ca", [FRONT])
    make_cert("limited", "ca", [LIMITED])
    make_cert("relay", "ca", [RELAY, RELAY_REL])
    make_cert("proxy", "ca", [PROXY_NAME])
    signer = os.path.join(PKI, "token-signer.pem")
    if not os.path.exists(signer):
        # Self-signed and without extended key usage: the registry verifies the token's x5c
        # chain against this very certificate (its rootcertbundle).
        openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", os.path.join(PKI, "token-signer.key"),
                "-out", signer, "-days", "3650", "-subj", "/CN=pullpath lab token signer")


# ---------------------------------------------------------------- servers


def write(path: str, text: str):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    # Write in place: `ip netns exec` bind-mounts resolv.conf and hosts, and a rename would
    # leave running processes reading the old file.
    with open(path, "w") as f:
        f.write(text)


def dnsmasq_conf(without: tuple = ()) -> str:
    """The resolver's zone. `without` names record groups it lacks (`registry`) or answers
    with the public address instead of the private one (`registry@public`)."""
    lines = ["local=/example.test/"]
    for group, records in RECORDS.items():
        if group in without:
            continue
        public = f"{group}@public" in without
        lines += [f"host-record={name},{PUBLIC_ADDRESS if public else ip}" for name, ip in records]
        lines += [f"cname={alias},{target}" for alias, target in CNAMES.get(group, [])]
    return "\n".join(lines) + "\n"


def start_resolver(server: str, listen: str, conf_text: str, extra: str = ""):
    conf = os.path.join(STATE, "dns", f"{server}.conf")
    write(conf, conf_text + extra)
    start(server, ns("dns"), "dnsmasq", "--keep-in-foreground", "--no-resolv", "--no-hosts", "--bind-interfaces",
          f"--listen-address={listen}", "--port=53", f"--conf-file={conf}", "--user=root", "--log-queries",
          "--log-facility=-", "--cache-size=0")
    wait_listening(server, ns("dns"), listen, 53, proto="udp")


def start_node_resolver(without: tuple = ()):
    start_resolver("node-resolver", NODE_RESOLVER, dnsmasq_conf(without))


def start_cluster_resolver():
    cluster = "local=/cluster.local/\nhost-record=kube-dns.kube-system.svc.cluster.local,10.10.5.3\n"
    start_resolver("cluster-resolver", CLUSTER_RESOLVER, dnsmasq_conf(), cluster)


def node_files(hosts_extra: str = "", hosts_on: dict = None):
    """The nodes' resolv.conf and hosts; `hosts_extra` goes into the first pool's nodes' hosts
    files, `hosts_on` ({namespace: lines}) into one node's."""
    hosts_on = hosts_on or {}
    for name in ("node", "oldnode", "node2", *IMAGE_NODES):
        extra = (hosts_extra if name in ("node", "oldnode") else "") + hosts_on.get(name, "")
        write(f"/etc/netns/{ns(name)}/resolv.conf", f"nameserver {NODE_RESOLVER}\n")
        write(f"/etc/netns/{ns(name)}/hosts", "127.0.0.1 localhost\n::1 localhost\n" + extra)
    write(f"/etc/netns/{ns('proxy')}/resolv.conf", f"nameserver {NODE_RESOLVER}\n")
    write(f"/etc/netns/{ns('proxy')}/hosts", "127.0.0.1 localhost\n")
    write(f"/etc/netns/{ns('pod')}/resolv.conf",
          f"search default.svc.cluster.local svc.cluster.local cluster.local\nnameserver {CLUSTER_RESOLVER}\noptions ndots:5\n")
    write(f"/etc/netns/{ns('pod')}/hosts", "127.0.0.1 localhost\n")


def distribution_config(root: str, listen: str, cert: str, redirect_to: str = "", extra: str = "") -> str:
    """A Distribution configuration: filesystem storage at `root`, TLS with `cert`, blob
    downloads redirected to `redirect_to` (none when empty), then `extra` sections (auth)."""
    middleware = f"""middleware:
  storage:
    - name: redirect
      options:
        baseurl: {redirect_to}
""" if redirect_to else ""
    return f"""version: 0.1
log:
  level: info
  formatter: text
storage:
  filesystem:
    rootdirectory: {root}
  delete:
    enabled: true
  cache:
    blobdescriptor: inmemory
http:
  addr: "{listen}"
  tls:
    certificate: {PKI}/{cert}.pem
    key: {PKI}/{cert}.key
{extra}{middleware}"""


def start_registry(cert: str = "registry", redirect: str = "labstore"):
    data = os.path.join(STATE, "registry-data")
    os.makedirs(data, exist_ok=True)
    conf = os.path.join(STATE, "registry.yml")
    auth = f"""auth:
  token:
    realm: https://{AUTH}/token
    service: {REGISTRY}
    issuer: pullpath-lab-auth
    rootcertbundle: {PKI}/token-signer.pem
"""
    # On every address of the namespace, IPv4 and IPv6.
    write(conf, distribution_config(data, ":443", cert, REDIRECTS[redirect], auth))
    start("registry", ns("registry"), "docker-registry", "serve", conf)
    wait_listening("registry", ns("registry"), "*", 443)
    with open(os.path.join(STATE, "registry-cert"), "w") as f:
        f.write(f"{cert} {redirect}")


def start_auth():
    start("auth", ns("auth"), sys.executable, os.path.join(LAB, "tokend.py"), "--listen", f"{addr('auth')}:443",
          "--tls-cert", f"{PKI}/auth.pem", "--tls-key", f"{PKI}/auth.key",
          "--signing-key", f"{PKI}/token-signer.key", "--signing-cert", f"{PKI}/token-signer.pem")
    wait_listening("auth", ns("auth"), addr("auth"), 443)


def mirror_layer(state_dir: str, image: str = "team-a/small:v1", index: int = -1) -> str:
    """The path under a storage root of one layer's data file of a pushed image."""
    with open(os.path.join(STATE, "images.json")) as f:
        digest = json.load(f)["images"][image]["digest"]

    def blob(d: str) -> str:
        hexd = d.split(":", 1)[1]
        return os.path.join(state_dir, "docker/registry/v2/blobs/sha256", hexd[:2], hexd, "data")

    with open(blob(digest)) as f:
        manifest = json.load(f)
    return blob(manifest["layers"][index]["digest"])


def mirror_storage(damage: str) -> str:
    """The mirror's storage: the registry's own, or a hard-linked copy with one layer of
    team-a/small missing or corrupted (same size, other bytes)."""
    data = os.path.join(STATE, "registry-data")
    if damage == "":
        return data
    copy = os.path.join(STATE, "mirror-data")
    shutil.rmtree(copy, ignore_errors=True)
    run("cp", "-al", data, copy)
    layer = mirror_layer(copy)
    size = os.path.getsize(layer)
    os.remove(layer)  # a hard link: the registry's own file stays intact
    if damage == "corrupt":
        with open(layer, "wb") as f:
            f.write(bytes((i * 7 + 3) % 251 for i in range(size)))
    return copy


def start_mirror(redirect: str = "labstore", damage: str = ""):
    """cache.example.test: Distribution without auth, its blobs redirected to `redirect`
    (`labstore`, `cachestore`, or `none` to serve them itself)."""
    conf = os.path.join(STATE, "mirror.yml")
    base = {"labstore": f"https://{BLOB}", "cachestore": f"https://{CACHESTORE}"}.get(redirect, "")
    write(conf, distribution_config(mirror_storage(damage), f"{addr('mirror')}:443", "cache", base))
    start("mirror", ns("mirror"), "docker-registry", "serve", conf)
    wait_listening("mirror", ns("mirror"), addr("mirror"), 443)


def nginx_head(state_dir: str, log: str, workers: int, log_format: str) -> str:
    """The part of an nginx configuration every lab nginx shares, up to its server blocks."""
    return f"""user root;
worker_processes {workers};
daemon off;
pid {STATE}/{state_dir}/nginx.pid;
error_log {LOGS}/{log}-error.log info;
events {{ worker_connections 256; }}
http {{
  log_format pullpath '{log_format}';
  access_log {LOGS}/{log}-access.log pullpath;
  client_body_temp_path {STATE}/{state_dir}/body;
  proxy_temp_path {STATE}/{state_dir}/proxy;
  fastcgi_temp_path {STATE}/{state_dir}/fastcgi;
  uwsgi_temp_path {STATE}/{state_dir}/uwsgi;
  scgi_temp_path {STATE}/{state_dir}/scgi;
  sendfile on;
  default_type application/octet-stream;"""


def start_blob():
    data = os.path.join(STATE, "registry-data")
    conf = os.path.join(STATE, "nginx", "nginx.conf")
    # The Authorization header is logged on purpose: tests prove the registry's credential
    # never reaches this host.
    write(conf, nginx_head("nginx", "blob", 2,
                           '$remote_addr "$request" $status $body_bytes_sent auth="$http_authorization" range="$http_range" host=$host msec=$msec') + f"""
  server {{
    listen {addr('blob')}:443 ssl;
    server_name {BLOB};
    ssl_certificate {PKI}/blob.pem;
    ssl_certificate_key {PKI}/blob.key;
    root {data};
    location /docker/registry/v2/blobs/ {{ }}
    location / {{ return 404; }}
  }}
  # The same blobs in clear text, as self-hosted object stores often serve them.
  server {{
    listen {addr('blob')}:80;
    server_name {BLOB};
    root {data};
    location /docker/registry/v2/blobs/ {{ }}
    location / {{ return 404; }}
  }}
  # A front like registry.k8s.io: every API request is sent on to the registry.
  server {{
    listen {addr('blob')}:443 ssl;
    server_name {FRONT};
    ssl_certificate {PKI}/front.pem;
    ssl_certificate_key {PKI}/front.key;
    location /v2/ {{ return 307 https://{REGISTRY}$request_uri; }}
    location / {{ return 404; }}
  }}
  # A registry whose pull limit is spent: /v2/ answers, every manifest request is a 429 with
  # the distribution spec's TOOMANYREQUESTS and a Retry-After of one second.
  server {{
    listen {addr('blob')}:443 ssl;
    server_name {LIMITED};
    ssl_certificate {PKI}/limited.pem;
    ssl_certificate_key {PKI}/limited.key;
    default_type application/json;
    location = /v2/ {{ return 200 '{{}}'; }}
    location ~ ^/v2/.+/manifests/ {{
      add_header Retry-After 1 always;
      return 429 '{{"errors":[{{"code":"TOOMANYREQUESTS","message":"too many requests","detail":"pull limit reached for this client, retry later"}}]}}';
    }}
    location / {{ return 404; }}
  }}
}}
""")
    start("blob", ns("blob"), "nginx", "-c", conf)
    wait_listening("blob", ns("blob"), addr("blob"), 443)
    wait_listening("blob", ns("blob"), addr("blob"), 80)


def start_proxy(mode: str = "open"):
    """tinyproxy in pp-proxy: `open`, `auth` (Basic credentials required: 407 without them) or
    `deny-registry` (its filter refuses CONNECT to the registry: 403)."""
    base = os.path.join(STATE, "proxy")
    os.makedirs(base, exist_ok=True)
    lines = [
        "User root", "Group root", "Port 3128", f"Listen {addr('proxy')}", "Timeout 30",
        f'LogFile "{LOGS}/proxy-access.log"', "LogLevel Info", f'PidFile "{base}/tinyproxy.pid"',
        "MaxClients 64", "Allow 10.10.0.0/16", "ConnectPort 443", "ConnectPort 80",
        "DisableViaHeader Yes",
    ]
    if mode == "auth":
        lines.append(f"BasicAuth {PROXY_USER} {PROXY_PASSWORD}")
    elif mode == "deny-registry":
        with open(os.path.join(base, "filter"), "w") as f:
            f.write("^registry\\.example\\.test$\n")
        lines += [f'Filter "{base}/filter"', "FilterExtended On", "FilterDefaultDeny No", "FilterURLs Off"]
    write(os.path.join(base, "tinyproxy.conf"), "\n".join(lines) + "\n")
    start("proxy", ns("proxy"), "tinyproxy", "-d", "-c", os.path.join(base, "tinyproxy.conf"))
    wait_listening("proxy", ns("proxy"), addr("proxy"), 3128)


def start_tls_proxy():
    """stunnel on 10.10.9.2:3129 in front of tinyproxy: the proxy spoken to over TLS."""
    base = os.path.join(STATE, "proxy")
    os.makedirs(base, exist_ok=True)
    conf = os.path.join(base, "stunnel.conf")
    write(conf, f"""foreground = yes
pid =
[proxy-tls]
accept = {addr('proxy')}:3129
connect = {addr('proxy')}:3128
cert = {PKI}/proxy.pem
key = {PKI}/proxy.key
""")
    start("tls-proxy", ns("proxy"), "stunnel4", conf)
    wait_listening("tls-proxy", ns("proxy"), addr("proxy"), 3129)


def start_inspecting_proxy():
    """mitmdump in pp-proxy on 8080: a TLS-inspecting proxy (its CA is in STATE/mitm)."""
    confdir = os.path.join(STATE, "mitm")
    os.makedirs(confdir, exist_ok=True)
    start("inspecting-proxy", ns("proxy"), os.path.join(TOOLS, "bin", "mitmdump"), "--mode", "regular",
          "--listen-host", addr("proxy"), "--listen-port", "8080", "--set", f"confdir={confdir}",
          "--set", "ssl_insecure=true", "--quiet")
    wait_listening("inspecting-proxy", ns("proxy"), addr("proxy"), 8080, seconds=30)


def systemd_dir() -> str:
    """Where the lab keeps the node's containerd unit drop-ins (probe --systemd-dir)."""
    return os.path.join(STATE, "systemd")


def write_dropin(env: dict):
    """A drop-in as the AKS HTTP proxy feature writes one; empty `env` removes it. Beside it the
    unit file itself, as a node has one: systemd applies drop-ins only to a unit that exists."""
    write(os.path.join(systemd_dir(), "containerd.service"),
          "[Unit]\nDescription=containerd container runtime\n\n[Service]\nExecStart=/usr/bin/containerd\n")
    path = os.path.join(systemd_dir(), "containerd.service.d", "http-proxy.conf")
    if not env:
        shutil.rmtree(os.path.join(systemd_dir(), "containerd.service.d"), ignore_errors=True)
        return
    values = " ".join(f'"{k}={v}"' for k, v in env.items())
    write(path, f"[Service]\nEnvironment={values}\n")


def start_relay():
    """Relays on 10.10.8.3: relay.example.test sends each blob request on to the blob host (a
    chain through two hosts); relay-rel.example.test answers with a relative Location and
    serves the blob itself."""
    data = os.path.join(STATE, "registry-data")
    conf = os.path.join(STATE, "relay", "nginx.conf")
    write(conf, nginx_head("relay", "relay", 1, '$remote_addr $host "$request" $status auth="$http_authorization"') + f"""
  server {{
    listen {RELAY_ADDRESS}:443 ssl;
    server_name {RELAY};
    ssl_certificate {PKI}/relay.pem;
    ssl_certificate_key {PKI}/relay.key;
    location /docker/ {{ return 302 https://{BLOB}$request_uri; }}
    location / {{ return 404; }}
  }}
  server {{
    listen {RELAY_ADDRESS}:443 ssl;
    server_name {RELAY_REL};
    ssl_certificate {PKI}/relay.pem;
    ssl_certificate_key {PKI}/relay.key;
    absolute_redirect off;
    location /docker/ {{ return 302 /local$request_uri; }}
    location /local/ {{ alias {data}/; }}
    location / {{ return 404; }}
  }}
}}
""")
    start("relay", ns("mirror"), "nginx", "-c", conf)
    wait_listening("relay", ns("mirror"), RELAY_ADDRESS, 443)


def containerd_dir(node: str) -> str:
    return os.path.join(STATE, "containerd", node)


def runtime_pid_file(node: str) -> str:
    """Where the pid of a node's containerd, as this machine's /proc numbers it, is kept (the
    server's pid file holds the unshare that leads its pid namespace)."""
    return os.path.join(containerd_dir(node), "pid")


def containerd_socket(node: str) -> str:
    if node == "k3s":
        # Where k3s's `-a` puts it, inside the node's root (its /run, in containerd's view).
        return os.path.join(node_image_root(node), K3S_SOCKET.lstrip("/"))
    return os.path.join(containerd_dir(node), "containerd.sock")


# The containerd version the lab runs: PULLPATH_LAB_CONTAINERD=1.6 (Debian 12's, the default),
# 1.7 or 2.1 (Debian trixie's and sid's, fetched by `lab.py fetch-runtimes` into RUNTIMES).
RUNTIMES = os.environ.get("PULLPATH_LAB_RUNTIMES", "/var/cache/pullpath-lab/runtimes")
RUNTIME_PACKAGES = {"1.7": ("trixie", "1.7.24~ds1-6+deb13u1"), "2.1": ("sid", "2.1.9+ds1-5")}


HOST_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)


def containerd_version() -> str:
    version = os.environ.get("PULLPATH_LAB_CONTAINERD", "1.6")
    if version not in ("1.6", *RUNTIME_PACKAGES):
        raise SetupFailed(f"PULLPATH_LAB_CONTAINERD={version!r}: the lab knows 1.6, 1.7 and 2.1")
    return version


def containerd_binary() -> str:
    version = containerd_version()
    if version == "1.6":
        return "containerd"
    binary = os.path.join(RUNTIMES, version, "usr", "bin", "containerd")
    if not os.path.exists(binary):
        raise SetupFailed(f"containerd {version} is not fetched: run `python3 lab/lab.py fetch-runtimes`")
    return binary


def fetch_runtimes():
    """Download containerd 1.7 (trixie) and 2.1 (sid) from the Debian mirror this machine uses,
    with a temporary sources list and state of their own (the machine's apt is untouched), and
    unpack them; idempotent, kept across `lab.py down`."""
    work = os.path.join(RUNTIMES, "apt")
    lists, cache = os.path.join(work, "lists"), os.path.join(work, "cache")
    missing = [v for v in RUNTIME_PACKAGES if not os.path.exists(os.path.join(RUNTIMES, v, "usr", "bin", "containerd"))]
    if not missing:
        return
    for d in (os.path.join(lists, "partial"), os.path.join(cache, "archives", "partial")):
        os.makedirs(d, exist_ok=True)
    keyring = "/usr/share/keyrings/debian-archive-keyring.gpg"
    sources = os.path.join(work, "sources.list")
    with open(sources, "w") as f:
        for suite in sorted({RUNTIME_PACKAGES[v][0] for v in missing}):
            f.write(f"deb [signed-by={keyring}] http://deb.debian.org/debian {suite} main\n")
    opts = ["-o", f"Dir::Etc::sourcelist={sources}", "-o", "Dir::Etc::sourceparts=-",
            "-o", f"Dir::State::Lists={lists}", "-o", f"Dir::Cache={cache}", "-o", "APT::Sandbox::User=root"]
    run("apt-get", "-qq", *opts, "update")
    for version in missing:
        _, package = RUNTIME_PACKAGES[version]
        result = subprocess.run(["apt-get", "-qq", *opts, "download", f"containerd={package}"],
                                cwd=work, capture_output=True, text=True)
        if result.returncode != 0:
            raise SetupFailed(f"downloading containerd {package} failed:\n{result.stderr}")
        deb = next(f for f in os.listdir(work) if f.startswith("containerd_") and f.endswith(".deb")
                   and package.split("+")[0].split("~")[0] in f)
        target = os.path.join(RUNTIMES, version)
        shutil.rmtree(target, ignore_errors=True)
        run("dpkg-deb", "-x", os.path.join(work, deb), target)


# A pod without hostNetwork (fleet's kubelet-pull pod) needs a pod network: Debian's
# containernetworking-plugins, a bridge inside the node's own namespace with no gateway and no
# route out, addresses from host-local kept under the node's state (not the machine-wide
# /var/lib/cni), so each node allocates its own.
CNI_PLUGINS = "/usr/lib/cni"


def write_cni_conf(base: str):
    write(os.path.join(base, "cni", "conf", "10-lab-pods.conflist"), json.dumps({
        "cniVersion": "1.0.0", "name": "lab-pods",
        "plugins": [{"type": "bridge", "bridge": "lab-pods0", "isGateway": False, "ipMasq": False,
                     "ipam": {"type": "host-local", "subnet": "10.88.0.0/24",
                              "dataDir": os.path.join(base, "cni", "ipam")}}],
    }, indent=2))


def restrict_oom() -> str:
    """The sandbox's spec asks for oom_score_adj -998 (the pause container's), and lowering it
    needs CAP_SYS_RESOURCE, which some machines' root lacks (a Firecracker VM's, as here): runc
    then dies in nsexec ("can't get final child's PID from pipe: EOF"). There, containerd's own
    switch for that case keeps every pod's score at or above containerd's; nothing the probe
    reads depends on it."""
    CAP_SYS_RESOURCE = 24
    with open("/proc/self/status") as f:
        effective = next(int(line.split()[1], 16) for line in f if line.startswith("CapEff:"))
    held = effective >> CAP_SYS_RESOURCE & 1
    return "" if held else "  restrict_oom_score_adj = true"


def containerd_config(base: str, config_path: str = "", discard_unpacked_layers: bool = False) -> str:
    """The node's containerd configuration: format 2 for 1.6 and 1.7, format 3 for 2.x (whose
    CRI plugin is split into io.containerd.cri.v1.images and .runtime); its hosts directories
    `config_path` (`base`/certs.d unless given); `discard_unpacked_layers` as EKS sets it (on
    2.1 and later it also makes the CRI plugin pull by itself, not through the transfer
    service, and so split a `config_path` list)."""
    config_path = config_path or f"{base}/certs.d"
    discard = "  discard_unpacked_layers = true\n" if discard_unpacked_layers else ""
    common = f"""root = "{base}/root"
state = "{base}/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
                    "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper",
                    "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "{base}/containerd.sock"

[ttrpc]
  address = "{base}/containerd.sock.ttrpc"

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "{base}/opt"
"""
    if containerd_version().startswith("2."):
        return f"""version = 3
{common}
[plugins."io.containerd.cri.v1.images"]
  snapshotter = "native"
{discard}  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "{REGISTRY}/pause:3.6"
  # The lab's nodes run no containers, so no runtime handler tells the image service which
  # platform and snapshotter to unpack for: say it.
  [plugins."io.containerd.cri.v1.images".runtime_platforms.runc]
    platform = "linux/{HOST_ARCH}"
    snapshotter = "native"
  [plugins."io.containerd.cri.v1.images".registry]
    config_path = "{config_path}"

# 2.x pulls through the transfer service, which unpacks for the platforms it is told.
[plugins."io.containerd.transfer.v1.local"]
  [[plugins."io.containerd.transfer.v1.local".unpack_config]]
    platform = "linux/{HOST_ARCH}"
    snapshotter = "native"

[plugins."io.containerd.cri.v1.runtime"]
{restrict_oom()}
[plugins."io.containerd.cri.v1.runtime".cni]
  bin_dir = "{CNI_PLUGINS}"
  conf_dir = "{base}/cni/conf"
"""
    return f"""version = 2
{common}
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{REGISTRY}/pause:3.6"
{restrict_oom()}
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "native"
  {discard}  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_PLUGINS}"
    conf_dir = "{base}/cni/conf"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "{config_path}"
"""


# hosts.toml files a scenario writes instead of (or beside) the lab's own, by `hosts-toml VARIANT`:
# the directory under certs.d and the file. Each is read differently by containerd's lines.
def hosts_toml_variant(variant: str) -> tuple:
    if variant == "server-only":
        # No [host] table: 1.6 and 1.7 cannot decode it and pull from alias.example.test itself
        # (no such name); 2.x reads `server` and pulls from the registry.
        return ALIAS, f"""server = "https://{REGISTRY}"
ca = "{PKI}/ca.pem"
"""
    if variant == "http-with-ca":
        # http:// written for a registry that speaks TLS, with a CA: 1.6 speaks plain HTTP to
        # port 80 (nothing listens); 1.7 and 2.x try HTTPS on 443 first, and it answers.
        return REGISTRY, f"""server = "http://{REGISTRY}"
ca = "{PKI}/ca.pem"

[host."http://{REGISTRY}"]
  capabilities = ["pull", "resolve"]
  ca = "{PKI}/ca.pem"
"""
    raise SetupFailed(f"unknown hosts.toml variant {variant!r}")


# The node's kubelet credential sources (`kubelet-creds VARIANT`), as files the probe reads
# with the kubelet's flags: KUBELET/provider.yaml and KUBELET/bin (the plugin), KUBELET/root
# (its --root-dir, for config.json), KUBELET/pull-secret.json (a pod's imagePullSecret).
KUBELET = os.path.join(STATE, "kubelet")


def provider_config(match_images: list, args: list) -> str:
    images = "\n".join(f"      - \"{m}\"" for m in match_images)
    argv = "\n".join(f"      - \"{a}\"" for a in args)
    return f"""apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
  - name: lab-credential-provider
    matchImages:
{images}
    defaultCacheDuration: "5m"
    apiVersion: credentialprovider.kubelet.k8s.io/v1
    args:
{argv}
"""


def docker_config_json(registry: str, user: str, password: str) -> str:
    auth = base64.b64encode(f"{user}:{password}".encode()).decode()
    return json.dumps({"auths": {registry: {"auth": auth}}})


def write_kubelet_files(variant: str):
    shutil.rmtree(KUBELET, ignore_errors=True)
    os.makedirs(os.path.join(KUBELET, "bin"))
    os.makedirs(os.path.join(KUBELET, "root"))
    plugin = os.path.join(KUBELET, "bin", "lab-credential-provider")
    shutil.copy(os.path.join(LAB, "credential_provider.py"), plugin)
    os.chmod(plugin, 0o755)
    config = os.path.join(KUBELET, "provider.yaml")
    if variant == "provider":
        write(config, provider_config(["*.example.test"], ["--identity", "alice"]))
    elif variant == "provider-port":
        # Explicit :443 in matchImages: the kubelet compares ports as written, so an image named
        # without a port never matches.
        write(config, provider_config([f"{REGISTRY}:443"], ["--identity", "alice"]))
    elif variant == "provider-fails":
        write(config, provider_config(["*.example.test"], ["--fail"]))
    elif variant == "provider-stale":
        write(config, provider_config(["*.example.test"], ["--identity", "stale"]))
    elif variant == "secret-other-host":
        write(config, provider_config(["*.other.test"], ["--identity", "alice"]))
        write(os.path.join(KUBELET, "pull-secret.json"), docker_config_json("other.example.test", "alice", "alice-secret"))
    elif variant == "node-config":
        write(config, provider_config(["*.other.test"], ["--identity", "alice"]))
        write(os.path.join(KUBELET, "root", "config.json"), docker_config_json(REGISTRY, "alice", "alice-secret"))
    elif variant != "none":
        raise SetupFailed(f"unknown kubelet-creds variant {variant!r}")


def cgroup_mounts() -> str:
    """Shell commands mounting this machine's cgroup hierarchies (cgroup v1, v2 or both, as
    /proc/self/mounts lists them, in order) again under /sys/fs/cgroup, each ending in `&& `."""
    commands = []
    with open("/proc/self/mounts") as f:
        for line in f:
            source, target, fstype, options = line.split()[:4]
            if (target == "/sys/fs/cgroup" or target.startswith("/sys/fs/cgroup/")) and \
                    fstype in ("tmpfs", "cgroup", "cgroup2"):
                commands.append(f"mkdir -p {target} && mount -t {fstype} -o {options} {source} {target} && ")
    return "".join(commands)


def start_containerd(node: str, fresh: bool, mirrors: tuple = (), env: dict = None, hosts_files: tuple = ()):
    """Restart a node's containerd; `mirrors` ((host, "pull,resolve"), …) go into its hosts.toml
    ahead of the registry; `hosts_files` ((directory, text), …) are written last."""
    if node in IMAGE_NODES:
        return start_image_node(node, fresh)
    base = containerd_dir(node)
    server = f"containerd-{node}"
    stop(server)
    if fresh:
        shutil.rmtree(os.path.join(base, "root"), ignore_errors=True)
    # Only this scenario's registry directories.
    shutil.rmtree(os.path.join(base, "certs.d"), ignore_errors=True)
    certs = os.path.join(base, "certs.d", REGISTRY)
    # The CA goes on the [host] entry and on `server` itself: containerd falls back to the
    # server after a 404, and without the CA there "not found" would hide behind an x509 error.
    # (containerd 1.6 rejects a hosts.toml without a [host] table.)
    mirror_hosts = "".join(f"""[host."https://{m}"]
  capabilities = [{", ".join(f'"{c}"' for c in caps.split(","))}]
  ca = "{PKI}/ca.pem"

""" for m, caps in mirrors)
    write(os.path.join(certs, "hosts.toml"), f"""server = "https://{REGISTRY}"
ca = "{PKI}/ca.pem"

{mirror_hosts}[host."https://{REGISTRY}"]
  capabilities = ["pull", "resolve"]
  ca = "{PKI}/ca.pem"
""")
    # The other registry names trust the lab CA too (the front's redirects to the registry
    # use the front's TLS settings).
    for other in (FRONT, LIMITED, REGISTRY6, REGISTRY46):
        write(os.path.join(base, "certs.d", other, "hosts.toml"), f"""server = "https://{other}"

[host."https://{other}"]
  capabilities = ["pull", "resolve"]
  ca = "{PKI}/ca.pem"
""")
    for directory, text in hosts_files:
        write(os.path.join(base, "certs.d", directory, "hosts.toml"), text)
    conf = os.path.join(base, "config.toml")
    write(conf, containerd_config(base))
    write_cni_conf(base)
    launch_containerd(node, "", ["--config", conf], env)


def launch_containerd(node: str, prelude: str, args: list, env: dict = None, service_env: bool = False):
    """Start a node's containerd with `args` in the node's namespace, after the shell commands
    `prelude` (each ending in `&& `) set up its mount namespace, and wait until it answers;
    `service_env`: with a systemd service's environment and `env` only."""
    server = f"containerd-{node}"
    # `ip netns exec` gives the command a fresh /sys without this machine's cgroup mounts, and
    # runc cannot run a pod's containers without them ("no cgroup mount found in mountinfo"):
    # containerd starts after they are mounted again in its own mount namespace.
    # Each node's containerd is pid 1 of a pid namespace of its own, as on a node where a hostPID
    # probe pod sees that node's processes only (its containerd, its kubelet), never another
    # lab node's. `--kill-child` takes it down with the unshare the lab stops.
    start(server, NODES[node], "sh", "-c", f'{cgroup_mounts()}{prelude}exec "$0" "$@"', "unshare", "--pid",
          "--kill-child", "--mount-proc", containerd_binary(), *args, env=env, service_env=service_env)
    try:
        os.remove(runtime_pid_file(node))
    except FileNotFoundError:
        pass
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if os.path.exists(containerd_socket(node)):
            ok = run("ctr", "--address", containerd_socket(node), "version", check=False)
            if ok.returncode == 0:
                unshare = pid_of(server)
                with open(f"/proc/{unshare}/task/{unshare}/children") as f:
                    write(runtime_pid_file(node), f.read().split()[0])
                return
        if not alive(pid_of(server)):
            break
        time.sleep(0.05)
    log = os.path.join(LOGS, f"{server}.log")
    raise SetupFailed(f"{server} in {NODES[node]} did not answer on {containerd_socket(node)}; its log ({log}):\n{log_tail(log)}")


# ---------------------------------------------------------------- nodes laid out as node images


def node_image_root(node: str) -> str:
    """The node's `/` as its image lays it out (only the files its containerd and a probe pod
    read): what that node's containerd sees at those node paths, and what tests mount as its
    probe pod's /host (tests/support/lab_node.rs)."""
    return os.path.join(STATE, "roots", NODES[node])


# Amazon Linux 2023 (../shared/notes/nodes.md §2, §3): containerd's config_path is the image's
# two roots, its system trust the Fedora layout.
AL2023_CONFIG_PATH = "/etc/containerd/certs.d:/etc/docker/certs.d"
AL2023_PROXY_FILE = "/etc/sysconfig/containerd-proxy"
K3S_CONFIG = "/var/lib/rancher/k3s/agent/etc/containerd/config.toml"
K3S_CERTS = "/var/lib/rancher/k3s/agent/etc/containerd/certs.d"
K3S_CA = "/var/lib/rancher/k3s/agent/etc/registry-ca.pem"
K3S_SOCKET = "/run/k3s/containerd/containerd.sock"


def node_file(root: str, node_path: str, text: str, mode: int = 0o644):
    path = os.path.join(root, node_path.lstrip("/"))
    write(path, text)
    os.chmod(path, mode)


def node_link(root: str, node_path: str, target: str):
    path = os.path.join(root, node_path.lstrip("/"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.symlink(target, path)


def environment_file(text: str) -> dict:
    """An `EnvironmentFile=`'s variables as systemd reads the lab's (KEY=VALUE lines, `#` and
    `;` comments, no quoting used)."""
    env = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";")) and "=" in line:
            key, value = line.split("=", 1)
            env[key.strip()] = value.strip()
    return env


def build_al2023_root(root: str):
    """The AL2023-like node (nodeadm's config2.template.toml: `discard_unpacked_layers`, the
    two roots): the lab CA only in the extracted bundle under /etc/pki (what
    update-ca-trust writes from the anchors), reached as Go looks for it through absolute links
    (/etc/ssl/certs → /etc/pki/tls/certs, ca-bundle.crt → the extracted bundle, the links of
    Azure Linux's ca-certificates spec; AL2023's own layout is unconfirmed), no hosts.toml `ca`;
    containerd's unit with its proxy in an EnvironmentFile=; config.toml at containerd's default
    path naming both roots; the registry's hosts.toml, a mirror, only in /etc/docker/certs.d."""
    with open(os.path.join(PKI, "ca.pem")) as f:
        ca = f.read()
    node_file(root, "/etc/resolv.conf", f"nameserver {NODE_RESOLVER}\n")
    node_file(root, "/etc/hosts", "127.0.0.1 localhost\n::1 localhost\n")
    node_file(root, "/etc/pki/ca-trust/source/anchors/pullpath-lab-ca.pem", ca)
    node_file(root, "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", ca)
    node_link(root, "/etc/pki/tls/certs/ca-bundle.crt", "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem")
    node_link(root, "/etc/ssl/certs", "/etc/pki/tls/certs")
    os.makedirs(os.path.join(root, "etc/containerd/certs.d"), exist_ok=True)
    node_file(root, "/etc/containerd/config.toml", containerd_config(containerd_dir("al2023"), AL2023_CONFIG_PATH,
                                                                     discard_unpacked_layers=True))
    node_file(root, f"/etc/docker/certs.d/{REGISTRY}/hosts.toml", f"""server = "https://{REGISTRY}"

[host."https://{CACHE}"]
  capabilities = ["pull", "resolve"]
""")
    node_file(root, "/usr/lib/systemd/system/containerd.service",
              "[Unit]\nDescription=containerd container runtime\n\n[Service]\nExecStart=/usr/bin/containerd\n")
    node_file(root, "/etc/systemd/system/containerd.service.d/http-proxy.conf",
              f"[Service]\nEnvironmentFile={AL2023_PROXY_FILE}\n")
    node_file(root, AL2023_PROXY_FILE, f"HTTPS_PROXY={PROXY_URL}\nNO_PROXY=localhost,127.0.0.1\n")


def build_k3s_root(root: str):
    """The k3s-like node: no /etc/containerd; k3s's generated config.toml and certs.d under
    /var/lib/rancher (from /etc/rancher/k3s/registries.yaml, whose CA file and credentials it
    names), the registry's CA only there: the machine's own trust (the node's /etc/ssl) lacks
    the lab CA; alice's credential only in config.toml's `registry.configs`."""
    with open(os.path.join(PKI, "ca.pem")) as f:
        ca = f.read()
    node_file(root, "/etc/resolv.conf", f"nameserver {NODE_RESOLVER}\n")
    node_file(root, "/etc/hosts", "127.0.0.1 localhost\n::1 localhost\n")
    # The host distribution's trust, as this machine's containerd sees it (without the lab CA).
    os.makedirs(os.path.join(root, "etc/ssl/certs"))
    shutil.copy("/etc/ssl/certs/ca-certificates.crt", os.path.join(root, "etc/ssl/certs/ca-certificates.crt"))
    user, password = "alice", "alice-secret"
    node_file(root, "/etc/rancher/k3s/registries.yaml",
              f"configs:\n  \"{REGISTRY}\":\n    auth:\n      username: {user}\n      password: {password}\n"
              f"    tls:\n      ca_file: {K3S_CA}\n", 0o600)
    node_file(root, K3S_CA, ca)
    # k3s writes registries.yaml's credentials into config.toml (plaintext, root-only): the
    # registry's credential comes from containerd itself, the kubelet sends none.
    plugin = "io.containerd.cri.v1.images" if containerd_version().startswith("2.") else "io.containerd.grpc.v1.cri"
    node_file(root, K3S_CONFIG, containerd_config(containerd_dir("k3s"), K3S_CERTS) + f"""
[plugins."{plugin}".registry.configs."{REGISTRY}".auth]
  username = "{user}"
  password = "{password}"
""", 0o600)
    node_file(root, f"{K3S_CERTS}/{REGISTRY}/hosts.toml", f"""server = "https://{REGISTRY}"

[host."https://{REGISTRY}"]
  capabilities = ["pull", "resolve"]
  ca = ["{K3S_CA}"]
""")


def overlay_etc(root: str) -> str:
    """Shell commands laying the node's /etc over this machine's in containerd's mount
    namespace: each directory of the node's /etc replaces this machine's whole (an opaque
    directory), its files win, and /etc/pki exists only as the node has it."""
    etc = os.path.join(root, "etc")
    for entry in os.listdir(etc):
        path = os.path.join(etc, entry)
        if os.path.isdir(path) and not os.path.islink(path):
            os.setxattr(path, "trusted.overlay.opaque", b"y")
    return f"mount -t overlay pp-node-etc -o ro,lowerdir={etc}:/etc /etc && "


def var_lib_with(root: str) -> str:
    """Shell commands giving containerd's mount namespace a /var/lib holding the node's
    /var/lib/rancher (this machine has none) and the lab's state: a tmpfs with both bound in,
    moved over /var/lib."""
    staging = os.path.join(root, ".var-lib")
    os.makedirs(staging, exist_ok=True)
    commands = [f"mount -t tmpfs -o mode=0755 pp-node-var-lib {staging}",
                f"mkdir {staging}/rancher",
                f"mount --rbind {root}/var/lib/rancher {staging}/rancher"]
    if STATE.startswith("/var/lib/"):
        top = STATE.removeprefix("/var/lib/").split("/")[0]
        commands += [f"mkdir {staging}/{top}", f"mount --rbind /var/lib/{top} {staging}/{top}"]
    commands.append(f"mount -n --move {staging} /var/lib")
    return "".join(f"{c} && " for c in commands)


def run_with(root: str) -> str:
    """Shell commands giving containerd's mount namespace the node's /run (where k3s's socket
    goes), with this machine's /run/netns kept (pod network namespaces): a tmpfs with both bound
    in, moved over /run."""
    staging = os.path.join(root, ".run")
    os.makedirs(os.path.join(root, "run"), exist_ok=True)
    os.makedirs(staging, exist_ok=True)
    commands = [f"mount -t tmpfs -o mode=0755 pp-node-run {staging}",
                f"mkdir {staging}/k3s {staging}/netns",
                f"mount --rbind {root}/run/k3s {staging}/k3s"]
    if os.path.isdir("/run/netns"):
        commands.append(f"mount --rbind /run/netns {staging}/netns")
    commands.append(f"mount -n --move {staging} /run")
    return "".join(f"{c} && " for c in commands)


def start_image_node(node: str, fresh: bool):
    """A node laid out as its image: its root rebuilt, its containerd (state and socket under
    the lab's containerd directory, as every lab node's) started as the image starts it, seeing
    the image's files at their node paths."""
    base = containerd_dir(node)
    stop(f"containerd-{node}")
    if fresh:
        shutil.rmtree(os.path.join(base, "root"), ignore_errors=True)
    write_cni_conf(base)
    root = node_image_root(node)
    shutil.rmtree(root, ignore_errors=True)
    if node == "al2023":
        build_al2023_root(root)
        # systemd's EnvironmentFile= of the unit's drop-in: containerd's only proxy setting.
        with open(os.path.join(root, AL2023_PROXY_FILE.lstrip("/"))) as f:
            env = environment_file(f.read())
        # No --config: containerd reads its default /etc/containerd/config.toml, the node's.
        launch_containerd(node, overlay_etc(root), [], env, service_env=True)
    else:
        build_k3s_root(root)
        os.makedirs(os.path.join(root, os.path.dirname(K3S_SOCKET).lstrip("/")))
        # k3s's own command line for its containerd (pkg/agent/containerd getContainerdArgs);
        # state and content under the lab's containerd directory, as every lab node's.
        launch_containerd(node, var_lib_with(root) + run_with(root),
                          ["-c", K3S_CONFIG, "-a", K3S_SOCKET, "--state", os.path.join(base, "state"),
                           "--root", os.path.join(base, "root")], service_env=True)


def push_images(large: bool):
    result = in_ns("node", sys.executable, os.path.join(LAB, "images.py"), "push", STATE, REGISTRY,
                   os.path.join(PKI, "ca.pem"), *(["--large"] if large else []), check=False)
    if result.returncode != 0:
        raise SetupFailed(f"pushing test images failed:\n{result.stdout}{result.stderr}\n"
                          f"registry log:\n{log_tail(os.path.join(LOGS, 'registry.log'))}")


def pull_on(node: str, image: str, user: str, password: str):
    """Pull with ctr into a node's store (setup only: the ground truth itself goes through CRI)."""
    # ctr fetches in its own process, so it runs in the node's namespace like the node's runtime.
    result = run("ip", "netns", "exec", NODES[node], "ctr", "--address", containerd_socket(node), "-n", "k8s.io", "images", "pull",
                 "--snapshotter", "native", "--hosts-dir", os.path.join(containerd_dir(node), "certs.d"), "--user", f"{user}:{password}",
                 image, check=False)
    if result.returncode != 0:
        raise SetupFailed(f"pre-pulling {image} on {node} failed:\n{result.stderr}")


# ---------------------------------------------------------------- scenarios


def catalog() -> dict:
    with open(os.path.join(LAB, "scenarios.toml"), "rb") as f:
        return tomllib.load(f)["scenario"]


def apply_fault(fault: str, state: dict):
    words = fault.split()
    kind, args = words[0], words[1:]
    if kind == "node-route-del":
        for node in ("node", "oldnode"):
            in_ns(node, "ip", "route", "del", f"10.10.{HOSTS[args[0]]}.0/24")
    elif kind == "node-route6-del":
        for node in ("node", "oldnode"):
            in_ns(node, "ip", "-6", "route", "del", subnet6(args[0]))
    elif kind in ("return-route-del", "route-del"):
        # In namespace args[0], no route to args[1]'s subnet (a reply path, or one node's path).
        in_ns(args[0], "ip", "route", "del", f"10.10.{HOSTS[args[1]]}.0/24")
    elif kind == "nft-drop":
        nft_rule(args[0], f"tcp dport {args[1]} drop")
    elif kind == "nft-reset":
        nft_rule(args[0], f"tcp dport {args[1]} reject with tcp reset")
    elif kind == "node-dns-without":
        state["dns_without"] += tuple(args)
    elif kind == "node-dns-public":
        state["dns_without"] += tuple(f"{a}@public" for a in args)
    elif kind == "hosts-entry-on":
        state["hosts_on"][args[0]] = state["hosts_on"].get(args[0], "") + "".join(
            f"{ip} {REGISTRY if a == 'registry' else name}\n" for a in args[1:] for name, ip in RECORDS[a])
    elif kind == "node-hosts-entry":
        state["hosts"] += "".join(f"{ip} {REGISTRY if a == 'registry' else name}\n"
                                  for a in args for name, ip in RECORDS[a])
    elif kind == "node-mirror":
        state["mirrors"] += tuple((a, "pull,resolve") for a in args)
    elif kind == "cache-mirror":
        state["mirrors"] += ((CACHE, args[0] if args else "pull,resolve"),)
    elif kind == "cache-redirect":
        state["mirror_redirect"] = args[0]
    elif kind == "cache-blob":
        state["mirror_damage"] = args[0]
    elif kind == "registry-redirect":
        state["redirect"] = args[0]
    elif kind == "runtime-proxy":
        state["runtime_env"] = {"HTTPS_PROXY": PROXY_URL, **({"NO_PROXY": args[0]} if args else {})}
    elif kind == "runtime-proxy-with-credentials":
        state["runtime_env"] = {"HTTPS_PROXY": PROXY_URL.replace("http://", f"http://{PROXY_USER}:{PROXY_PASSWORD}@")}
    elif kind == "runtime-proxy-tls":
        state["runtime_env"] = {"HTTPS_PROXY": TLS_PROXY_URL}
    elif kind == "runtime-proxy-inspecting":
        state["runtime_env"] = {"HTTPS_PROXY": INSPECTING_PROXY_URL}
    elif kind == "proxy-mode":
        state["proxy_mode"] = args[0]
    elif kind == "dropin-proxy":
        state["dropin"] = {"HTTPS_PROXY": PROXY_URL}
    elif kind == "kubelet-creds":
        state["kubelet"] = args[0]
    elif kind == "node2-certs-without-ca":
        # pp-node2's hosts.toml names the registry without the lab CA: its image lacks it.
        state["node2_without_ca"] = True
    elif kind == "hosts-toml":
        state["hosts_files"] += (hosts_toml_variant(args[0]),)
    elif kind == "registry-cert":
        state["cert"] = f"registry-{args[0]}"
    else:
        raise SetupFailed(f"unknown fault {fault!r} in lab/scenarios.toml")


def switch(name: str):
    scenarios = catalog()
    if name not in scenarios:
        raise SetupFailed(f"no scenario {name!r}; known: {', '.join(sorted(scenarios))}")
    require_up()
    state = {"dns_without": (), "hosts": "", "cert": "registry", "mirrors": (),
             "mirror_redirect": "labstore", "mirror_damage": "", "redirect": "labstore",
             "runtime_env": {}, "proxy_mode": "open", "dropin": {}, "hosts_files": (),
             "kubelet": "none", "hosts_on": {}, "node2_without_ca": False}
    restore_routes()
    nft_reset()
    for fault in scenarios[name]["faults"]:
        apply_fault(fault, state)
    node_files(state["hosts"], state["hosts_on"])
    current = {}
    current_path = os.path.join(STATE, "scenario.json")
    if os.path.exists(current_path):
        with open(current_path) as f:
            current = json.load(f)
    if tuple(current.get("dns_without", ())) != state["dns_without"] or not alive(pid_of("node-resolver")):
        start_node_resolver(state["dns_without"])
    if (current.get("cert", "registry"), current.get("redirect", "labstore")) != (state["cert"], state["redirect"]) \
            or not alive(pid_of("registry")):
        start_registry(state["cert"], state["redirect"])
    mirror = [state["mirror_redirect"], state["mirror_damage"]]
    if current.get("mirror") != mirror or not alive(pid_of("mirror")):
        start_mirror(*mirror)
    if current.get("proxy_mode", "open") != state["proxy_mode"] or not alive(pid_of("proxy")):
        start_proxy(state["proxy_mode"])
    write_dropin(state["dropin"])
    write_kubelet_files(state["kubelet"])
    start_containerd("node", fresh=True, mirrors=state["mirrors"], env=state["runtime_env"],
                     hosts_files=state["hosts_files"])
    # The other nodes are restarted only when their settings change, or the containerd line the
    # lab runs (PULLPATH_LAB_CONTAINERD) does: every node then runs the same line.
    version_changed = current.get("containerd", "1.6") != containerd_version()
    for node in IMAGE_NODES:
        if version_changed or not alive(pid_of(f"containerd-{node}")):
            start_image_node(node, fresh=True)
    # The second pool's node: restarted when its registry trust changes.
    if current.get("node2_without_ca", False) != state["node2_without_ca"] or version_changed \
            or not alive(pid_of("containerd-node2")):
        files = ((REGISTRY, f"""server = "https://{REGISTRY}"

[host."https://{REGISTRY}"]
  capabilities = ["pull", "resolve"]
"""),) if state["node2_without_ca"] else ()
        start_containerd("node2", fresh=True, hosts_files=files)
    with open(current_path, "w") as f:
        json.dump({"name": name, "dns_without": list(state["dns_without"]), "cert": state["cert"],
                   "redirect": state["redirect"], "mirror": mirror, "proxy_mode": state["proxy_mode"],
                   "runtime_env": state["runtime_env"], "node2_without_ca": state["node2_without_ca"],
                   "containerd": containerd_version()}, f)


# ---------------------------------------------------------------- podman, the second runtime


PODMAN = os.path.join(STATE, "podman")
# Longer than podman's four 30 s dial timeouts and its retry pauses.
PODMAN_PATIENCE = 150


def podman_pull(image: str, creds: str = "") -> dict:
    """Pull with podman (containers/image, the library CRI-O pulls with) in the node's namespace,
    into an empty store, with the lab CA in its --cert-dir, the scenario's runtime environment
    (its proxy) and no registries.conf mirrors. Returns {outcome, message}: podman's own `Error:`
    text on failure."""
    require_up()
    certs = os.path.join(PODMAN, "certs")
    os.makedirs(certs, exist_ok=True)
    shutil.copy(os.path.join(PKI, "ca.pem"), os.path.join(certs, "ca.crt"))
    write(os.path.join(PODMAN, "registries.conf"), "unqualified-search-registries = []\n")
    write(os.path.join(PODMAN, "policy.json"), '{"default": [{"type": "insecureAcceptAnything"}]}\n')
    for d in ("root", "run"):
        shutil.rmtree(os.path.join(PODMAN, d), ignore_errors=True)
    with open(os.path.join(STATE, "scenario.json")) as f:
        runtime_env = json.load(f).get("runtime_env", {})
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": PODMAN,
           "CONTAINERS_REGISTRIES_CONF": os.path.join(PODMAN, "registries.conf"), **runtime_env}
    cmd = ["ip", "netns", "exec", NODES["node"], "podman", "--root", os.path.join(PODMAN, "root"),
           "--runroot", os.path.join(PODMAN, "run"), "--storage-driver", "vfs", "--cgroup-manager", "cgroupfs",
           "--events-backend", "none", "pull", "--quiet", "--signature-policy", os.path.join(PODMAN, "policy.json"),
           "--cert-dir", certs, *(["--creds", creds] if creds else []), image]
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=PODMAN_PATIENCE)
    except subprocess.TimeoutExpired:
        # containers/image sets no response-header timeout: a silent peer keeps it waiting.
        return {"outcome": "no-answer", "message": f"podman gave no answer within {PODMAN_PATIENCE} s"}
    finally:
        shutil.rmtree(os.path.join(PODMAN, "root"), ignore_errors=True)
    if result.returncode == 0:
        return {"outcome": "pulled", "message": ""}
    # The final `Error: ` and every line after it (an `errors:` list spans several).
    lines = result.stderr.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("Error: ")]
    message = "\n".join(lines[starts[-1]:]).removeprefix("Error: ") if starts else result.stderr.strip()
    return {"outcome": "failed", "message": message.strip()}


def require_up():
    if not os.path.exists(os.path.join(STATE, "up")):
        raise SetupFailed("the lab is not up: run `lab/lab.py up` first")


# ---------------------------------------------------------------- up / down


def up(large: bool):
    for dir_ in (STATE, LOGS, PIDS):
        os.makedirs(dir_, exist_ok=True)
    steps = [
        ("namespaces and routes", build_network),
        ("firewall baseline", nft_reset),
        ("PKI", build_pki),
        ("node files", node_files),
        ("node resolver (dnsmasq)", start_node_resolver),
        ("cluster resolver (dnsmasq)", start_cluster_resolver),
        ("token service", start_auth),
        ("registry (Distribution)", start_registry),
        ("blob host (nginx)", start_blob),
        ("test images", lambda: push_images(large)),
        ("mirror (Distribution)", start_mirror),
        ("relays (nginx)", start_relay),
        ("proxy (tinyproxy)", start_proxy),
        ("TLS-inspecting proxy (mitmproxy)", start_inspecting_proxy),
        ("proxy over TLS (stunnel)", start_tls_proxy),
        ("containerd on node", lambda: start_containerd("node", fresh=True)),
        ("containerd on old-node", lambda: start_containerd("old-node", fresh=True)),
        ("containerd on node2", lambda: start_containerd("node2", fresh=True)),
        *((f"containerd on {n} (node image)", lambda n=n: start_image_node(n, fresh=True)) for n in IMAGE_NODES),
        ("pre-pull on old-node", lambda: pull_on("old-node", f"{REGISTRY}/team-a/small:v1", "alice", "alice-secret")),
    ]
    for title, fn in steps:
        try:
            fn()
        except SetupFailed as e:
            raise SetupFailed(f"lab setup step '{title}' failed: {e}") from None
    with open(os.path.join(STATE, "scenario.json"), "w") as f:
        json.dump({"name": "healthy", "dns_without": [], "cert": "registry",
                   "mirror": ["labstore", ""]}, f)
    open(os.path.join(STATE, "up"), "w").close()
    print(f"lab is up (state in {STATE})")


def pod_netns_of_lab(since: float) -> list:
    """The pod network namespaces a lab node's containerd made (`/run/netns/cni-*`, created
    since the lab came up) that hold nothing but loopback: a sandbox its test did not remove,
    whose pod end was cut when the node's namespace went."""
    if not os.path.isdir("/run/netns"):
        return []
    found = []
    for name in os.listdir("/run/netns"):
        path = os.path.join("/run/netns", name)
        if not name.startswith("cni-") or os.path.getmtime(path) < since:
            continue
        links = run("ip", "-n", name, "-o", "link", check=False).stdout.splitlines()
        if all("link/loopback" in line for line in links):
            found.append(name)
    return found


def down():
    up_marker = os.path.join(STATE, "up")
    up_since = os.path.getmtime(up_marker) if os.path.exists(up_marker) else None
    if os.path.isdir(PIDS):
        for entry in os.listdir(PIDS):
            stop(entry.removesuffix(".pid"))
    for name in list(HOSTS) + ["router"]:
        if netns_exists(name):
            # Anything still running inside a lab namespace goes with it.
            pids = run("ip", "netns", "pids", ns(name), check=False).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            run("ip", "netns", "del", ns(name), check=False)
        shutil.rmtree(f"/etc/netns/{ns(name)}", ignore_errors=True)
    if up_since is not None:
        for name in pod_netns_of_lab(up_since):
            run("ip", "netns", "del", name, check=False)
    with open("/proc/mounts") as f:
        mounts = [line.split()[1] for line in f if line.split()[1].startswith(STATE)]
    for mount in reversed(mounts):
        run("umount", "-l", mount, check=False)
    lock = os.path.join(STATE, "test.lock")
    if lock_held(lock):
        # A test (or a restart run under `flock`) holds the lab's lock, and tests waiting for
        # it wait on this very file: it stays, and everything else of the lab goes.
        for entry in os.listdir(STATE):
            path = os.path.join(STATE, entry)
            if path != lock:
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.remove(path)
        print(f"lab is down ({lock} kept: it is held)")
        return
    shutil.rmtree(STATE, ignore_errors=True)
    print("lab is down")


def lock_held(path: str) -> bool:
    """Whether some process holds the flock on `path` (tests' LabGuard, `flock(1)`)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def leftovers_of_lab() -> list:
    """Namespaces, processes, files and mounts of the lab that still exist."""
    found = [f"namespace {n}" for n in os.listdir("/run/netns") if n.startswith(PREFIX)] if os.path.isdir("/run/netns") else []
    found += [f"directory /etc/netns/{n}" for n in os.listdir("/etc/netns") if n.startswith(PREFIX)] if os.path.isdir("/etc/netns") else []
    if os.path.exists(STATE):
        found.append(f"state directory {STATE}")
    with open("/proc/mounts") as f:
        found += [f"mount {line.split()[1]}" for line in f if line.split()[1].startswith(STATE)]
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if STATE in cmdline and int(pid) != os.getpid():
            found.append(f"process {pid}: {cmdline.strip()[:120]}")
    return found


def demo_setup_failure():
    """Show what `up` prints when a server dies: the same code path, with a server that exits."""
    require_up()
    start("doomed", ns("router"), "sh", "-c", "echo 'doomed: cannot bind 10.10.9.9:443: address not available' >&2; exit 1")
    try:
        wait_listening("doomed", ns("router"), "10.10.9.9", 443, seconds=5)
    except SetupFailed as e:
        stop("doomed")
        raise SetupFailed(f"lab setup step 'doomed server' failed: {e}") from None
    raise SystemExit("the doomed server did not fail")


def status() -> dict:
    out = {"up": os.path.exists(os.path.join(STATE, "up")), "state": STATE, "servers": {}, "sockets": {}}
    if os.path.isdir(PIDS):
        for entry in sorted(os.listdir(PIDS)):
            server = entry.removesuffix(".pid")
            out["servers"][server] = alive(pid_of(server))
    out["runtime_pids"] = {}
    for node in NODES:
        out["sockets"][node] = containerd_socket(node)
        if os.path.exists(runtime_pid_file(node)):
            with open(runtime_pid_file(node)) as f:
                out["runtime_pids"][node] = int(f.read())
    path = os.path.join(STATE, "scenario.json")
    if os.path.exists(path):
        with open(path) as f:
            out["scenario"] = json.load(f)["name"]
    out["namespaces"] = {name: ns(name) for name in list(HOSTS) + ["router"]}
    out["ca"] = os.path.join(PKI, "ca.pem")
    out["images"] = os.path.join(STATE, "images.json")
    out["logs"] = LOGS
    out["pids"] = {server: pid_of(server) for server in out["servers"] if pid_of(server)}
    out["systemd"] = systemd_dir()
    out["roots"] = {node: node_image_root(node) for node in IMAGE_NODES}
    out["kubelet"] = KUBELET
    out["containerd"] = containerd_version()
    return out


def main(argv):
    if os.geteuid() != 0:
        raise SystemExit("lab.py needs root: it creates network namespaces")
    try:
        if argv[:1] == ["up"]:
            up("--no-large" not in argv)
        elif argv[:1] == ["down"]:
            down()
        elif argv[:1] == ["scenario"] and len(argv) == 2:
            switch(argv[1])
            print(f"scenario {argv[1]}")
        elif argv[:1] == ["reset-node"] and len(argv) == 2 and argv[1] in NODES:
            require_up()
            start_containerd(argv[1], fresh=True)
        elif argv[:1] == ["podman-pull"] and len(argv) in (2, 3):
            print(json.dumps(podman_pull(argv[1], argv[2] if len(argv) == 3 else "")))
        elif argv[:1] == ["fetch-runtimes"]:
            fetch_runtimes()
        elif argv[:1] == ["check-clean"]:
            leftovers = leftovers_of_lab()
            if leftovers:
                raise SetupFailed("the lab left things behind:\n" + "\n".join(leftovers))
        elif argv[:1] == ["demo-setup-failure"]:
            demo_setup_failure()
        elif argv[:1] == ["status"]:
            print(json.dumps(status(), indent=2))
        else:
            raise SystemExit(__doc__)
    except SetupFailed as e:
        sys.stderr.write(f"lab: {e}\n")
        raise SystemExit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
