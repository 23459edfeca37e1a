#!/usr/bin/env python3
"""make check-kubernetes: the kustomize base deploy/kubernetes/ checked offline (docs/kubernetes.md).

1. The base is rendered as `kubectl apply -k` would (this script reads the few kustomize fields the base uses
   and refuses any other, so nothing is silently left out) and every object is validated, strictly, against the
   Kubernetes 1.30 and 1.37 schemas bundled with kubernetes-validate (no network).
2. The manifests are tied to the project, one named check each:
   - the ConfigMap's config is config/postern.json with exactly CONFIG_CHANGES applied, and `postern check`
     accepts it with the Deployment's environment (the Secret's placeholders given real values), while the
     placeholders as shipped are refused;
   - every POSTERN_* name the manifests set is one that Sources/PosternCore/Config reads;
   - the container ports are the config's listen and admin_listen ports, the probes name them, and `postern demo`
     run with the ConfigMap's config answers each probe's path with 200 on the listener the probe's port is;
   - the image is the one `make docker-smoke` builds and the uid the Dockerfile's USER;
   - Service, NetworkPolicy, HPA, PDB and the bootstrap Job point at what they should; the grace period
     outlasts the preStop pause and limits.shutdown_grace_s; every container is locked down and has
     requests and limits.
Prints one line per check and `check-kubernetes: N passed, N failed`; exits 1 on any failure.

`--write-config` rewrites deploy/kubernetes/postern.json from config/postern.json and CONFIG_CHANGES (after a
change of the shipped config).
"""
import base64
import copy
import json
import os
import pathlib
import re
import secrets
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
BASE = ROOT / "deploy" / "kubernetes"
POSTERN = ROOT / ".build" / "debug" / "postern"
# The oldest version the base supports (the preStop sleep action is on by default from 1.30) and the newest
# kubernetes-validate bundles.
KUBERNETES_VERSIONS = ["1.30.0", "1.37.0"]

# The ConfigMap's config differs from config/postern.json in these keys only (key path -> value).
CONFIG_CHANGES = {
    # The pod's address, so that Prometheus can scrape it; networkpolicy.yaml lets only monitoring pods in.
    ("admin_listen",): "0.0.0.0:9180",
    # One per core would be the node's cores, not the pod's CPU limit.
    ("workers",): 2,
    # A Directus Service named directus in the same namespace.
    ("directus", "url"): "http://directus:8055",
    # The trial Redis of redis.yaml (a managed one: POSTERN_SESSION_STORE in the Secret).
    ("sessions", "store"): "redis://postern-redis:6379/0",
}

# Names the manifests set that a change not yet merged adds to the config reader: accepted while the reader does
# not read them yet, and said so. Once the reader reads a name, its entry goes (POSTERN_CONFIG_WATCH is read by
# Config/ConfigSource.swift since the config reload).
PENDING_ENVIRONMENT_NAMES: dict[str, str] = {}

# The kustomization fields this script renders; any other makes it fail rather than check something else.
KUSTOMIZATION_FIELDS = {"apiVersion", "kind", "resources", "configMapGenerator"}


# --- rendering ------------------------------------------------------------------------------------------------

def shipped_config_for_kubernetes():
    """config/postern.json with CONFIG_CHANGES applied."""
    config = json.loads((ROOT / "config" / "postern.json").read_text())
    for path, value in CONFIG_CHANGES.items():
        node = config
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return config


def render(base):
    """The objects `kubectl apply -k base` would create, as (source file, object) pairs."""
    kustomization = yaml.safe_load((base / "kustomization.yaml").read_text())
    unknown = set(kustomization) - KUSTOMIZATION_FIELDS
    if unknown:
        raise SystemExit(f"check-kubernetes: kustomization.yaml uses {sorted(unknown)}, which this script does not "
                         f"render: teach scripts/check_kubernetes.py first")
    objects = []
    for resource in kustomization.get("resources", []):
        path = base / resource
        if not path.is_file():
            raise SystemExit(f"check-kubernetes: resource {resource} is not a file of the base")
        for document in yaml.safe_load_all(path.read_text()):
            if document is not None:
                objects.append((resource, document))
    for generator in kustomization.get("configMapGenerator", []):
        unknown = set(generator) - {"name", "files", "options"}
        if unknown:
            raise SystemExit(f"check-kubernetes: configMapGenerator {generator.get('name')} uses {sorted(unknown)}")
        data = {}
        for entry in generator["files"]:
            key, _, file = entry.rpartition("=")
            data[key or pathlib.Path(file).name] = (base / file).read_text()
        options = generator.get("options", {})
        metadata = {"name": generator["name"]}
        if options.get("labels"):
            metadata["labels"] = options["labels"]
        objects.append(("kustomization.yaml", {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data,
            # Not an object field: what the generator was told about the name's hash suffix.
            "x-disableNameSuffixHash": options.get("disableNameSuffixHash", False),
        }))
    return objects


# --- the checks -----------------------------------------------------------------------------------------------

class Failed(Exception):
    """A check's finding."""


def expect(condition, message):
    if not condition:
        raise Failed(message)


class Manifests:
    """The rendered base, with look-ups by kind and name."""

    def __init__(self, objects):
        self.objects = [obj for _, obj in objects]
        self.sources = objects

    def find(self, kind, name):
        found = [o for o in self.objects if o["kind"] == kind and o["metadata"]["name"] == name]
        expect(len(found) == 1, f"expected one {kind} {name}, found {len(found)}")
        return found[0]

    def workloads(self):
        """(object, pod spec) of every Deployment and Job."""
        for o in self.objects:
            if o["kind"] in ("Deployment", "Job"):
                yield o, o["spec"]["template"]["spec"]

    @property
    def gateway(self):
        return self.find("Deployment", "postern")

    @property
    def gateway_container(self):
        containers = self.gateway["spec"]["template"]["spec"]["containers"]
        expect(len(containers) == 1, "the gateway pod has one container")
        return containers[0]

    @property
    def config_map(self):
        return self.find("ConfigMap", "postern-config")

    def config(self):
        data = self.config_map["data"]
        expect(list(data) == ["postern.json"], f"the ConfigMap holds postern.json only, not {list(data)}")
        return json.loads(data["postern.json"])

    def secret_environment(self, container):
        """The variables a container gets from Secrets through envFrom: name -> the manifest's value."""
        env = {}
        for source in container.get("envFrom", []):
            expect("secretRef" in source, f"envFrom of {container['name']} only from Secrets")
            secret = self.find("Secret", source["secretRef"]["name"])
            env.update(secret.get("stringData", {}))
            env.update({k: base64.b64decode(v).decode() for k, v in secret.get("data", {}).items()})
        return env

    def environment(self, container):
        """Every variable a container is given, with its value where the manifests hold one."""
        env = self.secret_environment(container)
        for variable in container.get("env", []):
            env[variable["name"]] = variable.get("value")
        return env


def port_of(address):
    return int(address.rsplit(":", 1)[1])


def check_schemas(m):
    import kubernetes_validate
    import kubernetes_validate.utils
    available = kubernetes_validate.utils.all_versions()
    for version in KUBERNETES_VERSIONS:
        expect(version in available, f"kubernetes-validate has no schemas for {version} (it has {available[-3:]}…)")
        for source, obj in m.sources:
            plain = {k: v for k, v in obj.items() if not k.startswith("x-")}
            try:
                kubernetes_validate.validate(plain, version, strict=True)
            except kubernetes_validate.ValidationError as error:
                path = ".".join(str(p) for p in error.path)
                raise Failed(f"{source}: {obj['kind']} {obj['metadata']['name']} at {path}: {error.message} "
                             f"(Kubernetes {version})")
            except kubernetes_validate.SchemaNotFoundError as error:
                raise Failed(f"{source}: {error.message}")
    return f"{len(m.objects)} objects, strict, Kubernetes {' and '.join(KUBERNETES_VERSIONS)}"


def check_expected_objects(m):
    wanted = [("ConfigMap", "postern-config"), ("Secret", "postern"), ("Secret", "postern-directus-admin"),
              ("Deployment", "postern"), ("Service", "postern"), ("NetworkPolicy", "postern"),
              ("HorizontalPodAutoscaler", "postern"), ("PodDisruptionBudget", "postern"),
              ("Job", "postern-bootstrap"), ("Deployment", "postern-redis"), ("Service", "postern-redis"),
              ("NetworkPolicy", "postern-redis")]
    for kind, name in wanted:
        m.find(kind, name)
    expect(m.find("HorizontalPodAutoscaler", "postern")["apiVersion"] == "autoscaling/v2", "the HPA is autoscaling/v2")
    return f"{len(wanted)} objects"


def check_config_is_the_shipped_one(m):
    expect(m.config_map["x-disableNameSuffixHash"] is True,
           "the ConfigMap generator must keep the name (disableNameSuffixHash: true), or an edit is a new "
           "ConfigMap and a rolling restart, not a reload")
    expect(m.config() == shipped_config_for_kubernetes(),
           "deploy/kubernetes/postern.json is not config/postern.json with CONFIG_CHANGES: run "
           "`python3 scripts/check_kubernetes.py --write-config` and review the diff")
    expect(m.config()["sessions"]["store"].startswith("redis://"), "the ConfigMap's sessions are in Redis")
    return ", ".join(".".join(path) for path in CONFIG_CHANGES) + " changed"


def run_check(config_path, environment):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    env.update({k: v for k, v in environment.items() if v is not None and k != "POSTERN_CONFIG"})
    with tempfile.TemporaryDirectory() as directory:
        result = subprocess.run([str(POSTERN), "check", "--config", config_path], env=env, cwd=directory,
                                capture_output=True, text=True, timeout=60)
    return result.returncode, result.stdout + result.stderr


def check_postern_check_accepts_the_config(m, config_path):
    container = m.gateway_container
    environment = m.environment(container)
    real = dict(environment)
    real["POSTERN_SECRET_KEY"] = base64.b64encode(secrets.token_bytes(32)).decode()
    real["POSTERN_ADMIN_TOKEN"] = secrets.token_hex(24)
    status, output = run_check(config_path, real)
    expect(status == 0 and "config OK" in output, f"postern check with the Deployment's environment: {output.strip()}")
    # As shipped, the placeholders cannot run: both are named.
    status, output = run_check(config_path, environment)
    expect(status == 1, f"postern check passed the Secret's placeholders: {output.strip()}")
    for key in ("secret_key", "admin.token"):
        expect(key in output, f"postern check did not name {key} for the placeholder: {output.strip()}")
    # The Job reads the same file; bootstrap's credentials are checked by bootstrap itself.
    return "accepted with the Secret filled in; the placeholders refused"


def accepted_environment_names():
    """Every POSTERN_* name the config reader reads (nothing outside Sources/PosternCore/Config reads any)."""
    names = set()
    for source in (ROOT / "Sources" / "PosternCore" / "Config").rglob("*.swift"):
        names.update(re.findall(r'"(POSTERN_[A-Z0-9_]+)"', source.read_text()))
    return names


def check_environment_names(m):
    accepted = accepted_environment_names()
    used = set()
    for obj, pod in m.workloads():
        for container in pod["containers"]:
            if not container["image"].startswith(docker_smoke_image().split(":")[0]):
                continue
            for name in m.environment(container):
                expect(name.startswith("POSTERN_"), f"{obj['metadata']['name']}: {name} is not a POSTERN_ variable")
                used.add(name)
    unknown = sorted(used - accepted - set(PENDING_ENVIRONMENT_NAMES))
    expect(not unknown, f"not read by Sources/PosternCore/Config: {unknown}")
    pending = sorted((used - accepted) & set(PENDING_ENVIRONMENT_NAMES))
    note = "".join(f"; {name} not read yet ({PENDING_ENVIRONMENT_NAMES[name]})" for name in pending)
    return ", ".join(sorted(used)) + note


def check_ports_and_probes(m):
    config = m.config()
    container = m.gateway_container
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    expect(ports == {"http": port_of(config["listen"]), "admin": port_of(config["admin_listen"])},
           f"container ports {ports} are not listen {config['listen']} and admin_listen {config['admin_listen']}")
    expect(config["admin_listen"].startswith("0.0.0.0:"), "admin_listen must be the pod's address for Prometheus")
    probes = {kind: container[kind]["httpGet"] for kind in ("startupProbe", "livenessProbe", "readinessProbe")}
    expect({k: p["path"] for k, p in probes.items()}
           == {"startupProbe": "/healthz", "livenessProbe": "/healthz", "readinessProbe": "/readyz"},
           f"probe paths {probes}")
    for kind, probe in probes.items():
        expect(probe["port"] in ports, f"{kind} names port {probe['port']}, not one of {list(ports)}")
    annotations = m.gateway["spec"]["template"]["metadata"].get("annotations", {})
    expect(annotations.get("prometheus.io/port") == str(ports["admin"]), "prometheus.io/port is the admin port")
    return f"http {ports['http']}, admin {ports['admin']}"


def check_probes_answer(m, config_path):
    """`postern demo` with the ConfigMap's config (its own Directus stand-in, memory sessions, free ports):
    every probe's path answers 200 on the listener its port is, and /metrics on the admin one."""
    container = m.gateway_container
    by_port = {p["name"]: ("listen" if p["containerPort"] == port_of(m.config()["listen"]) else "admin")
               for p in container["ports"]}
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "POSTERN_LISTEN": "127.0.0.1:0",
           "POSTERN_ADMIN_LISTEN": "127.0.0.1:0", "POSTERN_LOG_LEVEL": "warning"}
    with tempfile.TemporaryDirectory() as directory:
        out_path = pathlib.Path(directory) / "demo.out"
        with open(out_path, "w") as out, open(pathlib.Path(directory) / "demo.err", "w") as err:
            demo = subprocess.Popen([str(POSTERN), "demo", "--standin-port", "0", "--config", config_path],
                                    env=env, cwd=directory, stdout=out, stderr=err)
        try:
            addresses = {}
            deadline = time.monotonic() + 30
            while len(addresses) < 2 and time.monotonic() < deadline:
                text = out_path.read_text()
                gateway = re.search(r"^postern demo: gateway on (http://[0-9.]+:[0-9]+)", text, re.M)
                console = re.search(r"^postern demo: operator console on (http://[0-9.]+:[0-9]+)/", text, re.M)
                if gateway and console:
                    addresses = {"listen": gateway.group(1), "admin": console.group(1)}
                expect(demo.poll() is None, f"postern demo exited: {(pathlib.Path(directory) / 'demo.err').read_text()}")
                time.sleep(0.1)
            expect(len(addresses) == 2, "postern demo printed no addresses in 30 s")
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
            calls = [(kind, by_port[probe["httpGet"]["port"]], probe["httpGet"]["path"])
                     for kind, probe in ((k, container[k]) for k in ("startupProbe", "livenessProbe", "readinessProbe"))]
            calls.append(("prometheus", "admin", m.gateway["spec"]["template"]["metadata"]["annotations"]["prometheus.io/path"]))
            for kind, listener, path in calls:
                url = addresses[listener] + path
                status = None
                deadline = time.monotonic() + 15  # /readyz waits for the stand-in's first ping
                while status != 200 and time.monotonic() < deadline:
                    try:
                        status = opener.open(url, timeout=5).status
                    except urllib.error.HTTPError as error:
                        status = error.code
                    except OSError:
                        status = None
                    if status not in (200, 503, None):
                        break  # only readiness is worth waiting for
                    if status != 200:
                        time.sleep(0.2)
                expect(status == 200, f"{kind}: GET {path} on the {listener} listener answered {status}")
        finally:
            demo.terminate()
            try:
                demo.wait(timeout=15)
            except subprocess.TimeoutExpired:
                demo.kill()
                demo.wait()
    return ", ".join(f"{kind} {path} on {listener}" for kind, listener, path in calls)


def docker_smoke_image():
    match = re.search(r"^IMAGE=(\S+)", (ROOT / "scripts" / "docker-smoke.sh").read_text(), re.M)
    expect(match is not None, "scripts/docker-smoke.sh names no IMAGE=")
    return match.group(1)


def dockerfile_user():
    match = re.search(r"^USER (\d+):(\d+)", (ROOT / "Dockerfile").read_text(), re.M)
    expect(match is not None, "the Dockerfile has no USER uid:gid")
    return int(match.group(1)), int(match.group(2))


def check_image_and_user(m):
    image = docker_smoke_image()
    uid, gid = dockerfile_user()
    for name in ("postern", "postern-bootstrap"):
        obj = m.find("Deployment" if name == "postern" else "Job", name)
        pod = obj["spec"]["template"]["spec"]
        for container in pod["containers"]:
            expect(container["image"] == image, f"{name}: image {container['image']}, docker-smoke builds {image}")
        context = pod["securityContext"]
        expect(context.get("runAsNonRoot") is True and context.get("runAsUser") == uid and context.get("runAsGroup") == gid,
               f"{name}: runAsNonRoot with the Dockerfile's {uid}:{gid}, not {context}")
    return f"{image}, uid {uid}"


def check_lockdown_and_resources(m):
    for obj, pod in m.workloads():
        name = obj["metadata"]["name"]
        expect(pod.get("securityContext", {}).get("runAsNonRoot") is True, f"{name}: runAsNonRoot")
        expect(pod.get("automountServiceAccountToken") is False, f"{name}: no service account token")
        for container in pod["containers"]:
            context = container.get("securityContext", {})
            expect(context.get("readOnlyRootFilesystem") is True, f"{name}: read-only root filesystem")
            expect(context.get("allowPrivilegeEscalation") is False, f"{name}: no privilege escalation")
            expect(context.get("capabilities", {}).get("drop") == ["ALL"], f"{name}: every capability dropped")
            resources = container.get("resources", {})
            for part in ("requests", "limits"):
                expect({"cpu", "memory"} <= set(resources.get(part, {})), f"{name}: cpu and memory {part}")
    return "every container of every Deployment and Job"


def check_config_mount_and_watch(m):
    container = m.gateway_container
    environment = m.environment(container)
    expect(environment.get("POSTERN_CONFIG_WATCH") == "1", "POSTERN_CONFIG_WATCH=1")
    for obj, pod in m.workloads():
        if obj["metadata"]["name"] == "postern-redis":
            continue
        c = pod["containers"][0]
        config_path = pathlib.PurePosixPath(m.environment(c)["POSTERN_CONFIG"])
        volumes = {v["name"]: v for v in pod["volumes"]}
        mounts = [mount for mount in c["volumeMounts"]
                  if volumes[mount["name"]].get("configMap", {}).get("name") == "postern-config"]
        expect(len(mounts) == 1, f"{obj['metadata']['name']}: one mount of the ConfigMap")
        expect("subPath" not in mounts[0], f"{obj['metadata']['name']}: a subPath mount never sees a ConfigMap edit")
        expect(mounts[0]["mountPath"] == str(config_path.parent) and config_path.name in m.config_map["data"],
               f"{obj['metadata']['name']}: POSTERN_CONFIG {config_path} is not the mounted ConfigMap's file")
    # Writable places are emptyDirs only (the root filesystem is read-only).
    pod = m.gateway["spec"]["template"]["spec"]
    kinds = {v["name"]: set(v) - {"name"} for v in pod["volumes"]}
    expect(all(k in ({"configMap"}, {"emptyDir"}) for k in kinds.values()), f"gateway volumes {kinds}")
    return "directory mount, POSTERN_CONFIG_WATCH=1"


def check_shutdown(m):
    pod = m.gateway["spec"]["template"]["spec"]
    pause = m.gateway_container["lifecycle"]["preStop"]["sleep"]["seconds"]
    grace = m.config()["limits"]["shutdown_grace_s"]
    period = pod["terminationGracePeriodSeconds"]
    expect(pause > 0, "a preStop pause")
    expect(period > pause + grace, f"terminationGracePeriodSeconds {period} <= preStop {pause} + shutdown_grace_s {grace}")
    return f"preStop {pause} s + shutdown_grace_s {grace} s < {period} s"


def check_service_policy_scaling(m):
    gateway = m.gateway
    labels = gateway["spec"]["template"]["metadata"]["labels"]
    ports = {p["name"]: p["containerPort"] for p in m.gateway_container["ports"]}

    def selects(selector):
        return selector and all(labels.get(k) == v for k, v in selector.items())

    expect(gateway["spec"]["replicas"] == 2, "2 replicas")
    expect(selects(gateway["spec"]["selector"]["matchLabels"]), "the Deployment selects its pods")
    service = m.find("Service", "postern")
    expect(selects(service["spec"]["selector"]), "the Service selects the gateway pods")
    targets = [p["targetPort"] for p in service["spec"]["ports"]]
    expect(targets in (["http"], [ports["http"]]), f"the Service exposes the API port only, not {targets}")
    policy = m.find("NetworkPolicy", "postern")["spec"]
    expect(selects(policy["podSelector"]["matchLabels"]) and policy["policyTypes"] == ["Ingress"], "the policy covers the gateway")
    for rule in policy["ingress"]:
        rule_ports = [p["port"] for p in rule["ports"]]
        if "admin" in rule_ports or ports["admin"] in rule_ports:
            expect(rule_ports in (["admin"], [ports["admin"]]), "the admin rule is for the admin port only")
            peers = rule.get("from", [])
            expect(peers and all(p.get("podSelector", {}).get("matchLabels") == {"postern-monitoring": "true"}
                                 and "ipBlock" not in p for p in peers),
                   f"the admin port only from pods labelled postern-monitoring: \"true\", not {peers}")
        else:
            expect(rule_ports in (["http"], [ports["http"]]), f"an open rule is for the API port only, not {rule_ports}")
    hpa = m.find("HorizontalPodAutoscaler", "postern")["spec"]
    expect(hpa["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "postern"}, "the HPA scales the gateway")
    expect(hpa["minReplicas"] >= 2 and hpa["maxReplicas"] > hpa["minReplicas"], "the HPA keeps two at least")
    pdb = m.find("PodDisruptionBudget", "postern")["spec"]
    expect(selects(pdb["selector"]["matchLabels"]), "the PDB covers the gateway pods")
    redis_service = m.find("Service", "postern-redis")
    store = m.config()["sessions"]["store"]
    expect(f"//{redis_service['metadata']['name']}:{redis_service['spec']['ports'][0]['port']}/" in store,
           f"sessions.store {store} is the trial Redis Service")
    return "Service, NetworkPolicy, HPA, PDB, Redis Service"


def check_bootstrap_job(m):
    job = m.find("Job", "postern-bootstrap")
    container = job["spec"]["template"]["spec"]["containers"][0]
    expect(container.get("args") == ["bootstrap"] and "command" not in container, "the Job runs `postern bootstrap`")
    environment = m.environment(container)
    expect({"POSTERN_DIRECTUS_ADMIN_EMAIL", "POSTERN_DIRECTUS_ADMIN_PASSWORD"} <= set(environment)
           or "POSTERN_DIRECTUS_ADMIN_TOKEN" in environment, "the Job has the Directus admin's credentials")
    gateway_secrets = m.secret_environment(m.gateway_container)
    expect(not any(k.startswith("POSTERN_DIRECTUS_ADMIN") for k in gateway_secrets),
           "the gateway is not given the Directus admin's credentials")
    expect(m.gateway_container.get("args") == ["serve"], "the gateway runs `postern serve`")
    return "postern bootstrap with the postern-directus-admin Secret"


def main():
    if sys.argv[1:] == ["--write-config"]:
        target = BASE / "postern.json"
        target.write_text(json.dumps(shipped_config_for_kubernetes(), indent=2) + "\n")
        print(f"check-kubernetes: wrote {target.relative_to(ROOT)}")
        return 0
    if not POSTERN.exists():
        print(f"check-kubernetes: {POSTERN} is missing: swift build --product postern", file=sys.stderr)
        return 1
    m = Manifests(render(BASE))
    with tempfile.TemporaryDirectory() as directory:
        config_path = str(pathlib.Path(directory) / "postern.json")
        pathlib.Path(config_path).write_text(m.config_map["data"]["postern.json"])
        checks = [
            ("every manifest validates against the Kubernetes schemas", lambda: check_schemas(m)),
            ("the base has every object", lambda: check_expected_objects(m)),
            ("the ConfigMap is the shipped config with Redis sessions", lambda: check_config_is_the_shipped_one(m)),
            ("postern check accepts the ConfigMap with the manifests' environment",
             lambda: check_postern_check_accepts_the_config(m, config_path)),
            ("every environment name is one the config reader reads", lambda: check_environment_names(m)),
            ("ports and probes are the config's", lambda: check_ports_and_probes(m)),
            ("each probe's path answers 200 on its port (postern demo with the ConfigMap)",
             lambda: check_probes_answer(m, config_path)),
            ("the image and uid are the Dockerfile's", lambda: check_image_and_user(m)),
            ("every container is locked down and bounded", lambda: check_lockdown_and_resources(m)),
            ("the ConfigMap reaches the pods without a restart", lambda: check_config_mount_and_watch(m)),
            ("the grace period outlasts preStop and shutdown_grace_s", lambda: check_shutdown(m)),
            ("Service, NetworkPolicy, HPA and PDB point at the gateway", lambda: check_service_policy_scaling(m)),
            ("the bootstrap Job", lambda: check_bootstrap_job(m)),
        ]
        passed = failed = 0
        for name, check in checks:
            try:
                detail = check()
                passed += 1
                print(f"check-kubernetes: ok   {name} ({detail})")
            except (Failed, KeyError, TypeError) as error:
                failed += 1
                reason = error if isinstance(error, Failed) else f"{type(error).__name__}: missing {error}"
                print(f"check-kubernetes: FAIL {name}: {reason}")
    print(f"check-kubernetes: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
