#!/usr/bin/env python3
"""Starts or removes a compose stack with plain podman commands (make docker-smoke, scripts/docker-smoke.sh).

    compose-podman.py up   PROJECT MERGED.yml     # MERGED.yml: `podman-compose ... config` (merged, interpolated)
    compose-podman.py down PROJECT

Why not `podman-compose up`: with podman 4.3 (Debian 12) it ignores `condition: service_healthy` (its
`podman wait --condition=healthy` needs podman 4.6), and without systemd nothing runs the healthchecks at all,
so the bootstrap would start before Directus answers. Here each service starts once its depends_on conditions
hold: service_started (running), service_healthy (`podman healthcheck run` until it passes), and
service_completed_successfully (exited 0). Containers, the network and volumes are named and labelled as
docker compose names them (`PROJECT_SERVICE_1`, `com.docker.compose.project`/`service`), and every service is
reachable by its name on the project's network (aardvark-dns), as with compose.

Understands the keys docker-compose.yml and deploy/compose.standin.yml use: image, command, environment,
ports, volumes, labels, container_name, healthcheck (test, interval, timeout, retries, start_period, disable),
restart, depends_on with conditions. Anything else in a service is refused, so that a new key cannot be
silently ignored by the smoke test.
"""
import shlex
import subprocess
import sys
import time

import yaml

KNOWN = {"image", "build", "command", "environment", "ports", "volumes", "labels", "container_name",
         "healthcheck", "restart", "depends_on", "profiles"}
WAIT_S = 180


def podman(*args, check=True, capture=True):
    result = subprocess.run(["podman", *args], capture_output=capture, text=True)
    if check and result.returncode != 0:
        sys.exit(f"compose-podman: podman {' '.join(args[:3])} ...: {result.stderr.strip()}")
    return result


def log(message):
    print(f"compose-podman: {message}", flush=True)


def container_name(project, name, service):
    return service.get("container_name") or f"{project}_{name}_1"


def state(container):
    result = podman("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", container, check=False)
    return result.stdout.split() if result.returncode == 0 else None


def wait_for(project, services, dependency, condition):
    container = container_name(project, dependency, services[dependency])
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        current = state(container)
        if current and condition == "service_started" and current[0] == "running":
            return
        if current and condition == "service_healthy" and current[0] == "running":
            if podman("healthcheck", "run", container, check=False).returncode == 0:
                return
        if current and condition == "service_completed_successfully" and current[0] == "exited":
            if current[1] == "0":
                return
            sys.exit(f"compose-podman: {dependency} exited {current[1]}, which {condition} refuses")
        time.sleep(1)
    sys.exit(f"compose-podman: {dependency} did not reach {condition} within {WAIT_S}s")


def order(services):
    done, result = set(), []

    def visit(name, path):
        if name in done:
            return
        if name in path:
            sys.exit(f"compose-podman: depends_on cycle through {name}")
        for dependency in services[name].get("depends_on", {}):
            if dependency not in services:
                sys.exit(f"compose-podman: {name} depends on {dependency}, which is not a service here")
            visit(dependency, path | {name})
        done.add(name)
        result.append(name)

    for name in services:
        visit(name, set())
    return result


def run_arguments(project, name, service, volumes):
    unknown = set(service) - KNOWN
    if unknown:
        sys.exit(f"compose-podman: service {name} uses {sorted(unknown)}, which this runner does not implement")
    args = ["run", "-d", "--name", container_name(project, name, service), "--network", f"{project}_default",
            "--network-alias", name, "--label", f"com.docker.compose.project={project}",
            "--label", f"com.docker.compose.service={name}"]
    for key, value in (service.get("labels") or {}).items():
        args += ["--label", f"{key}={value}"]
    environment = service.get("environment") or {}
    if isinstance(environment, list):
        environment = dict(item.split("=", 1) for item in environment)
    for key, value in environment.items():
        args += ["-e", f"{key}={'' if value is None else value}"]
    for port in service.get("ports") or []:
        args += ["-p", str(port)]
    for volume in service.get("volumes") or []:
        source, _, target = str(volume).partition(":")
        if source in volumes:
            source = f"{project}_{source}"
        args += ["-v", f"{source}:{target}"]
    health = service.get("healthcheck")
    if health:
        if health.get("disable"):
            args.append("--no-healthcheck")
        else:
            # podman 4.3 takes no JSON array here: a string, run with /bin/sh -c (CMD-SHELL); a CMD list is
            # quoted into one.
            test = health.get("test")
            if isinstance(test, list) and test:
                test = " ".join(test[1:]) if test[0] == "CMD-SHELL" else shlex.join(test[1:] if test[0] == "CMD" else test)
            if test:
                args += ["--health-cmd", test]
            for key, flag in (("interval", "--health-interval"), ("timeout", "--health-timeout"),
                              ("retries", "--health-retries"), ("start_period", "--health-start-period")):
                if key in health:
                    args += [flag, str(health[key])]
    restart = service.get("restart")
    if restart and restart != "no":
        args += ["--restart", restart]
    command = service.get("command")
    if isinstance(command, str):
        command = ["sh", "-c", command]
    return args + [service["image"]] + list(command or [])


def up(project, path):
    with open(path) as f:
        config = yaml.safe_load(f)
    services = config.get("services") or {}
    volumes = set((config.get("volumes") or {}).keys())
    network = f"{project}_default"
    if podman("network", "exists", network, check=False).returncode != 0:
        podman("network", "create", "--label", f"com.docker.compose.project={project}", network)
    for volume in sorted(volumes):
        if podman("volume", "exists", f"{project}_{volume}", check=False).returncode != 0:
            podman("volume", "create", "--label", f"com.docker.compose.project={project}", f"{project}_{volume}")
    for name in order(services):
        service = services[name]
        if state(container_name(project, name, service)) is not None:
            continue  # started by an earlier `up` (a second one adds a profile's services)
        for dependency, spec in (service.get("depends_on") or {}).items():
            condition = (spec or {}).get("condition", "service_started")
            wait_for(project, services, dependency, condition)
        podman(*run_arguments(project, name, service, volumes))
        log(f"started {name} ({container_name(project, name, service)})")


def down(project):
    label = f"label=com.docker.compose.project={project}"
    ids = podman("ps", "-a", "-q", "--filter", label).stdout.split()
    if ids:
        podman("rm", "-f", "-v", *ids, check=False)
    for volume in podman("volume", "ls", "-q", "--filter", label).stdout.split():
        podman("volume", "rm", "-f", volume, check=False)
    podman("network", "rm", "-f", f"{project}_default", check=False)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "up":
        up(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "down":
        down(sys.argv[2])
    else:
        sys.exit(__doc__)
