#!/usr/bin/env python3
"""A stand-in Slurm for tests: sbatch, srun, sacct, squeue, scancel, sinfo, sacctmgr, sshare.

Each command in this directory is a link to this file; it acts by the name it is called as.
It implements what snakemake-executor-plugin-slurm (2.8) and its jobstep plugin call, with
the same arguments and output formats, and runs the jobs for real on this machine:

- `sbatch [options] (--wrap=CMD | SCRIPT [ARGS] | /dev/stdin)` appends one JSON line per call
  (its argument list, parsed options, job id, cwd) to the file $IPS_SLURM_LOG, gives the job an
  id, starts it in the background (`sh -c CMD` or `sh SCRIPT`, in -D, output to --output with
  %j/%x replaced, SLURM_* variables set like Slurm's) and prints the id (`ID` with --parsable,
  else `Submitted batch job ID`). With IPS_SLURM_SYNC=1 it returns only once the job ended.
  Unsupported options (e.g. --array) are an error, as an unknown option is for sbatch.
- `srun [options] CMD ...` (what the jobstep runs inside a job) logs its call the same way and
  runs CMD in place; resource options are not enforced.
- `sacct` / `squeue` report the jobs (state RUNNING, COMPLETED, FAILED or CANCELLED, exit code)
  filtered by --name / -j, in the fields and separators asked for (--format/-o, --parsable2,
  --noheader; squeue's --format with %i %T %j %A).
- `scancel ID...` kills a job's process group and marks it CANCELLED.
- `sinfo -o %P` lists $IPS_SLURM_PARTITIONS (default "cpu*,gpu"; `*` marks the default).
- `sacctmgr ... format=account` / `sshare ... Account` list $IPS_SLURM_ACCOUNTS (comma-separated;
  empty: nothing, and the plugin skips its account check).

State (job records, the id counter) lives in $IPS_SLURM_STATE (default: a folder under the
system's temporary directory). Only the standard library is used.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# sbatch options that take a value as the next argument (short and long forms).
_SBATCH_VALUED = {
    "-A": "account", "--account": "account",
    "-p": "partition", "--partition": "partition",
    "-J": "job-name", "--job-name": "job-name",
    "-o": "output", "--output": "output",
    "-e": "error", "--error": "error",
    "-D": "chdir", "--chdir": "chdir",
    "-t": "time", "--time": "time",
    "-C": "constraint", "--constraint": "constraint",
    "-c": "cpus-per-task", "--cpus-per-task": "cpus-per-task",
    "-n": "ntasks", "--ntasks": "ntasks",
    "-N": "nodes", "--nodes": "nodes",
    "-G": "gpus", "--gpus": "gpus",
    "-M": "clusters", "--clusters": "clusters",
    "-x": "exclude", "--exclude": "exclude",
    "-q": "qos", "--qos": "qos",
    "--comment": "comment", "--mem": "mem", "--mem-per-cpu": "mem-per-cpu",
    "--gres": "gres", "--cpus-per-gpu": "cpus-per-gpu", "--ntasks-per-gpu": "ntasks-per-gpu",
    "--ntasks-per-node": "ntasks-per-node", "--reservation": "reservation",
    "--export": "export", "--wrap": "wrap", "--mail-type": "mail-type",
    "--mail-user": "mail-user", "--gpus-per-node": "gpus-per-node",
}
_SBATCH_FLAGS = {"--parsable", "--requeue", "--no-requeue", "--exclusive"}
_UNSUPPORTED = {"--array", "-a", "--dependency", "-d", "--begin"}


def _state_dir() -> Path:
    default = Path(tempfile.gettempdir()) / f"ips-slurm-stub-{os.getuid()}"
    d = Path(os.environ.get("IPS_SLURM_STATE") or default)
    (d / "jobs").mkdir(parents=True, exist_ok=True)
    return d


def _log_call(cmd: str, argv: list[str], **extra) -> None:
    path = os.environ.get("IPS_SLURM_LOG")
    if not path:
        return
    line = json.dumps({"cmd": cmd, "argv": argv, "cwd": os.getcwd(), **extra})
    with open(path, "a", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(line + "\n")


def _die(cmd: str, msg: str, code: int = 1):
    print(f"{cmd}: error: {msg}", file=sys.stderr)
    sys.exit(code)


def _record_path(jobid: str) -> Path:
    return _state_dir() / "jobs" / f"{jobid}.json"


def _read(jobid: str) -> dict | None:
    try:
        return json.loads(_record_path(jobid).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def _write(rec: dict) -> None:
    path = _record_path(rec["id"])
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(rec))
    tmp.replace(path)


def _update(jobid: str, **changes) -> dict:
    """Change a job record under a lock (the runner and scancel may race)."""
    with open(_state_dir() / "lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        rec = _read(jobid)
        if rec.get("state") in (None, "RUNNING", "PENDING") or "state" not in changes:
            rec.update(changes)
            _write(rec)
        return rec


def _next_id() -> str:
    with open(_state_dir() / "lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        counter = _state_dir() / "last_id"
        n = int(counter.read_text()) + 1 if counter.exists() else 1001
        counter.write_text(str(n))
        return str(n)


def parse_sbatch(argv: list[str]) -> tuple[dict, list[str]]:
    """sbatch's options (long names, as given) and the script with its arguments."""
    opts: dict[str, object] = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if not a.startswith("-") or a == "-":
            return opts, argv[i:]
        name, eq, value = a.partition("=")
        if name in _UNSUPPORTED:
            _die("sbatch", f"the test stub does not support {name}")
        if name in _SBATCH_FLAGS and not eq:
            opts[name.lstrip("-")] = True
        elif name in _SBATCH_VALUED:
            if not eq:
                i += 1
                if i >= len(argv):
                    _die("sbatch", f"option {name} requires an argument")
                value = argv[i]
            opts[_SBATCH_VALUED[name]] = value
        elif len(name) > 2 and name[:2] in _SBATCH_VALUED and not name.startswith("--"):
            opts[_SBATCH_VALUED[name[:2]]] = a[2:]  # -A acct written as -Aacct
        else:
            _die("sbatch", f"unrecognized option '{a}'")
        i += 1
    return opts, []


def sbatch(argv: list[str]) -> int:
    opts, script = parse_sbatch(argv)
    jobid = _next_id()
    state = _state_dir()
    if "wrap" in opts:
        if script:
            _die("sbatch", "script arguments not permitted with --wrap option")
        body = f"#!/bin/sh\n{opts['wrap']}\n"
    elif script:
        body = sys.stdin.read() if script[0] in ("/dev/stdin", "-") else Path(script[0]).read_text()
    else:
        body = sys.stdin.read()
    if not body.strip():
        _die("sbatch", "Batch script is empty!")
    script_path = state / "jobs" / f"{jobid}.sh"
    script_path.write_text(body)
    _log_call("sbatch", argv, jobid=jobid, options=opts, script=script[1:])

    workdir = Path(opts.get("chdir") or os.getcwd()).resolve()
    name = str(opts.get("job-name") or (Path(script[0]).name if script else "wrap"))
    pattern = str(opts.get("output") or "slurm-%j.out")
    output = workdir / pattern.replace("%j", jobid).replace("%x", name).replace("%%", "%")
    env = dict(os.environ)  # --export=ALL (the plugin always passes it)
    env.update(
        SLURM_JOB_ID=jobid, SLURM_JOBID=jobid, SLURM_JOB_NAME=name,
        SLURM_SUBMIT_DIR=os.getcwd(), SLURM_CLUSTER_NAME="stub", SLURM_NTASKS=str(opts.get("ntasks", 1)),
        SLURM_JOB_NUM_NODES="1", SLURM_NODELIST="localhost",
    )
    for key, var in [("partition", "SLURM_JOB_PARTITION"), ("account", "SLURM_JOB_ACCOUNT"),
                     ("cpus-per-task", "SLURM_CPUS_PER_TASK"), ("gpus", "SLURM_GPUS"),
                     ("mem", "SLURM_MEM_PER_NODE")]:
        if key in opts:
            env[var] = str(opts[key])
    rec = {"id": jobid, "name": name, "state": "RUNNING", "exit_code": None, "pid": None,
           "partition": opts.get("partition", ""), "account": opts.get("account", ""),
           "workdir": str(workdir), "output": str(output), "script": str(script_path),
           "args": script[1:], "submit_time": time.time()}
    _write(rec)
    # The runner is detached (own session, output to the job's log, no pipes to us), so sbatch
    # returns at once, as the real one does once the job is queued.
    output.parent.mkdir(parents=True, exist_ok=True)
    with open(output, "ab") as log:
        runner = subprocess.Popen(
            [sys.executable, os.path.realpath(__file__), "_run", jobid],
            env=env, cwd=workdir, start_new_session=True,
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
        )
    _update(jobid, pid=runner.pid)
    if os.environ.get("IPS_SLURM_SYNC") == "1":
        runner.wait()
    print(jobid if opts.get("parsable") else f"Submitted batch job {jobid}")
    return 0


def run_job(jobid: str) -> int:
    """The job itself (in the runner process): its script under sh, then its final state."""
    code = 1
    try:
        rec = _read(jobid)
        code = subprocess.call(["/bin/sh", rec["script"], *rec["args"]], stdin=subprocess.DEVNULL)
    finally:  # a crash of the runner itself is a failed job, not one running forever
        state = "COMPLETED" if code == 0 else ("CANCELLED" if code < 0 else "FAILED")
        _update(jobid, state=state, exit_code=code, end_time=time.time())
    return 0


def srun(argv: list[str]) -> int:
    """Run the command after srun's options in place (we are already "on the node")."""
    _log_call("srun", argv, jobid=os.environ.get("SLURM_JOB_ID"))
    valued = {"-n", "-c", "-N", "-J", "-G", "-t", "-p", "-A", "--jobid", "--mem", "--mem-per-cpu",
              "--ntasks", "--cpus-per-task", "--gpus", "--nodes"}
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if argv[i] in valued else 1
    if i >= len(argv):
        _die("srun", "no command given")
    os.execvp(argv[i], argv[i:])


def _jobs() -> list[dict]:
    recs = []
    for p in sorted((_state_dir() / "jobs").glob("*.json"), key=lambda p: int(p.stem)):
        rec = _read(p.stem)
        if rec:
            recs.append(rec)
    return recs


def _field(rec: dict, name: str) -> str:
    name = name.lower()
    code = rec.get("exit_code")
    values = {
        "jobid": rec["id"], "jobidraw": rec["id"], "jobname": rec["name"], "state": rec["state"],
        "exitcode": "" if code is None else (f"0:{-code}" if code < 0 else f"{code}:0"),
        "partition": rec.get("partition", ""), "account": rec.get("account", ""),
        "nodelist": "localhost", "reason": "None",
    }
    return values.get(name, "")


def sacct(argv: list[str]) -> int:
    """sacct [-X] [-P|--parsable2] [-n|--noheader] [-o|--format F,..] [--name N] [-j IDS] ..."""
    fields, names, ids, header, parsable = ["JobID", "JobName", "State", "ExitCode"], None, None, True, False
    valued = {"--format": "o", "-o": "o", "--name": "name", "--jobs": "j", "-j": "j", "--user": "u",
              "-u": "u", "--starttime": "S", "-S": "S", "--endtime": "E", "-E": "E",
              "--clusters": "M", "-M": "M"}
    flags = {"--noheader": "n", "-n": "n", "--parsable2": "P", "-P": "P", "--allocations": "X", "-X": "X"}
    args = list(argv)
    while args:
        a = args.pop(0)
        name, eq, value = a.partition("=")
        if name in valued:
            key = valued[name]
            if not eq:
                value = args.pop(0) if args else ""
        elif name in flags:
            key = flags[name]
        elif re.fullmatch(r"-[A-Za-z]{2,}", a):  # bundled short flags, e.g. -nX or -nu USER
            for c in a[1:-1]:
                args.insert(0, f"-{c}")
            args.insert(len(a) - 2, f"-{a[-1]}")
            continue
        else:
            continue  # other options do not change what the stub reports
        if key == "o":
            fields = [re.sub(r"%-?\d*$", "", f) for f in value.split(",") if f]
        elif key == "name":
            names = set(value.split(","))
        elif key == "j":
            ids = set(value.split(","))
        elif key == "n":
            header = False
        elif key == "P":
            parsable = True
    rows = [r for r in _jobs() if (names is None or r["name"] in names) and (ids is None or r["id"] in ids)]
    table = ([fields] if header else []) + [[_field(r, f) for f in fields] for r in rows]
    for row in table:
        print("|".join(row) if parsable else " ".join(f"{v:>12}" for v in row))
    return 0


def squeue(argv: list[str]) -> int:
    """squeue [--format=FMT] [--states=all] [--noheader] [--name N] [-j IDS]."""
    fmt, names, ids, header, all_states = "%i %j %T", None, None, True, False
    i = 0
    while i < len(argv):
        name, eq, value = argv[i].partition("=")
        if name in ("--format", "-o", "--name", "-n", "--jobs", "-j", "--states", "-t") and not eq:
            i += 1
            value = argv[i] if i < len(argv) else ""
        if name in ("--format", "-o"):
            fmt = value
        elif name in ("--name", "-n"):
            names = set(value.split(","))
        elif name in ("--jobs", "-j"):
            ids = set(value.split(","))
        elif name in ("--states", "-t"):
            all_states = value.lower() == "all"
        elif name in ("--noheader", "-h"):
            header = False
        i += 1
    rows = [r for r in _jobs() if (names is None or r["name"] in names) and (ids is None or r["id"] in ids)
            and (all_states or r["state"] in ("RUNNING", "PENDING"))]
    codes = {"i": "jobid", "A": "jobid", "j": "jobname", "T": "state"}
    if header:
        print(re.sub(r"%(\w)", lambda m: codes.get(m.group(1), m.group(1)).upper(), fmt))
    for r in rows:
        print(re.sub(r"%(\w)", lambda m: _field(r, codes.get(m.group(1), "")), fmt))
    return 0


def scancel(argv: list[str]) -> int:
    for jobid in (a for a in argv if not a.startswith("-")):
        rec = _read(jobid.split("_")[0])
        if rec is None:
            print(f"scancel: error: Invalid job id {jobid}", file=sys.stderr)
            continue
        if rec["state"] == "RUNNING":
            _update(rec["id"], state="CANCELLED", exit_code=-int(signal.SIGTERM))
            try:
                os.killpg(rec["pid"], signal.SIGTERM)
            except (ProcessLookupError, TypeError):
                pass
    return 0


def sinfo(argv: list[str]) -> int:
    parts = [p for p in os.environ.get("IPS_SLURM_PARTITIONS", "cpu*,gpu").split(",") if p]
    print("PARTITION")
    print("\n".join(parts))
    return 0


def accounts(argv: list[str]) -> int:
    """sacctmgr -n -s list user U format=account%256 / sshare -U --format Account --noheader."""
    for a in os.environ.get("IPS_SLURM_ACCOUNTS", "").split(","):
        if a.strip():
            print(a.strip())
    return 0


COMMANDS = {"sbatch": sbatch, "srun": srun, "sacct": sacct, "squeue": squeue, "scancel": scancel,
            "sinfo": sinfo, "sacctmgr": accounts, "sshare": accounts}


def main() -> int:
    cmd = Path(sys.argv[0]).name
    if cmd == "slurm.py" and len(sys.argv) >= 3 and sys.argv[1] == "_run":
        return run_job(sys.argv[2])
    if cmd not in COMMANDS:
        _die("slurm-stub", f"called as {cmd!r}; expected one of {', '.join(COMMANDS)}")
    return COMMANDS[cmd](sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
