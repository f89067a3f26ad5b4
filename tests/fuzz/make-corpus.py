#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora (tests/fuzz/corpus/<target>/) and dictionaries
(tests/fuzz/<target>.dict) from the project's own data:

  slurm     stdout captured from the testbed (tests/data/slurm/*.json)
  records   results.jsonl lines of the recorded runs (tests/data/runs), a few of each kind, and
            the findings of their report.json files
  messages  every message type, as tests/unit/test_protocol.cpp builds them, and record batches
            carrying recorded results
  frame     the same messages as frames, alone and in streams, behind the control byte
  hostlist  the hostlists of tests/unit/test_hostlist.cpp and of the captured SLURM output
  params    each declared parameter at its default (from common/checks.cpp) and --params forms
and, for each target, the inputs that once failed (REGRESSIONS).

Rerun after the data changes: python3 tests/fuzz/make-corpus.py. Names are content hashes, as
libFuzzer names its own, so rerunning writes the same files.
"""
import glob
import hashlib
import json
import os
import re
import shutil
import struct

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus")


def dumps(v):
    return json.dumps(v, separators=(",", ":"), sort_keys=True)


def write(target, items):
    d = os.path.join(OUT, target)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    seen = set()
    for item in items:
        data = item.encode() if isinstance(item, str) else item
        h = hashlib.sha1(data).hexdigest()
        if h in seen:
            continue
        seen.add(h)
        with open(os.path.join(d, h), "wb") as f:
            f.write(data)
    return len(seen)


def frame(body):
    b = body.encode() if isinstance(body, str) else body
    return struct.pack(">I", len(b)) + b


def slurm_outputs():
    outs = []
    for f in sorted(glob.glob(os.path.join(ROOT, "tests/data/slurm/*.json"))):
        d = json.load(open(f))
        for key in ("stdout", "stderr"):
            if d.get(key):
                outs.append(d[key])
    return outs


def recorded_lines(per_kind=3):
    """A few results.jsonl lines of each (record, test, metric, status) in the recorded runs."""
    picked, count = [], {}
    for f in sorted(glob.glob(os.path.join(ROOT, "tests/data/runs/*/results.jsonl"))):
        for line in open(f):
            line = line.strip()
            if not line:
                continue
            j = json.loads(line)
            kind = (j.get("record"), j.get("test"), j.get("metric"), j.get("status"), bool(j.get("problems")))
            if count.get(kind, 0) < per_kind:
                count[kind] = count.get(kind, 0) + 1
                picked.append(line)
    return picked


def findings():
    out = []
    for f in sorted(glob.glob(os.path.join(ROOT, "tests/data/runs/*/report.json"))):
        out += [dumps(x) for x in json.load(open(f)).get("findings", [])]
    return out


def protocol_messages():
    """The messages of tests/unit/test_protocol.cpp."""
    info = {"host": "gpu007", "world_rank": 3, "world_size": 8, "local_rank": 0, "local_size": 1, "gpu_count": 8,
            "gpu_models": ["NVIDIA H200"], "gpu_skip_reason": "", "cuda_driver": "13.0", "cuda_runtime": "13.0",
            "nccl_version": "2.28.9", "mpi_version": "Open MPI v4.1.4", "ib_devices": 0}
    nonce = "0123456789abcdef" * 4  # 32 bytes of hex, as auth::random_hex(32) makes them
    msgs = [
        {"type": "challenge", "version": 3, "nonce": nonce},
        {"type": "hello", "version": 3, "ranks": [3, 4, 5], "world_size": 8, "host": "gpu007", "client_nonce": nonce,
         "info": info},
        {"type": "welcome", "run_id": "run1", "heartbeat_s": 2.5},
        {"type": "round", "id": 42, "tests": [{"key": "mpi.all_reduce", "params": {"max_bytes": 1024}},
                                             {"key": "host.inventory", "params": {}}],
         "group_count": 4, "groups": [[0, [0, 1]], [1, [[2, 9]]], [3, [4, [10, 12], 20]]], "deadline_s": 30},
        {"type": "ack", "seq": 5},
        {"type": "done", "round_id": 7, "rank": 3, "last_seq": 99},
        {"type": "heartbeat", "ts": 1.25},
        {"type": "error", "code": "auth_failed", "message": "nope"},
        {"type": "bye", "reason": "done"},
    ]
    return msgs


def record_batches():
    """Record batches as they travel: a header line, then results.jsonl lines of recorded runs."""
    lines = recorded_lines(per_kind=1)[:40]
    out = []
    for start in range(0, len(lines), 8):
        chunk = lines[start:start + 8]
        out.append("\n".join([dumps({"type": "records", "last_seq": start + len(chunk)})] + chunk))
    return out


def messages_corpus():
    return [dumps(m) for m in protocol_messages()] + record_batches()


def frame_corpus():
    msgs = [dumps(m) for m in protocol_messages()]
    seeds = [bytes([0]) + frame(m) for m in msgs[:11]]
    seeds.append(bytes([3]) + b"".join(frame(m) for m in msgs[:11]))  # one stream, pieces of 4
    seeds.append(bytes([0x85]) + b"".join(frame(m) for m in msgs[4:20]))  # random pieces
    seeds.append(bytes([0x41]) + frame(msgs[0]) + frame(msgs[4]))  # 64-byte limit: the second is refused
    seeds.append(bytes([0]) + frame(msgs[6])[:-1])  # truncated
    seeds += [bytes([0]) + struct.pack(">I", 0), bytes([0]) + frame("nope!"), bytes([0]) + frame("[1]"),
              bytes([0]) + struct.pack(">I", (4 << 20) + 1)]
    return seeds


def hostlist_corpus():
    text = open(os.path.join(ROOT, "tests/unit/test_hostlist.cpp")).read()
    exprs = [s for s in re.findall(r'"([^"\\]*)"', text) if re.fullmatch(r"[A-Za-z0-9\[\],_.$ -]{1,80}", s) and s.count(" ") <= 1]
    for out in slurm_outputs():
        exprs += re.findall(r"(?:Nodes|NodeList|Switches)=(\S+)", out)
        for line in out.splitlines():
            fields = line.split("|")
            if len(fields) == 6:
                exprs.append(fields[5])
            elif len(fields) == 4:
                exprs.append(fields[2])
    return [e for e in exprs if e and e not in ("(null)", "None")]


def catalog():
    """(check keys, [(param name, type, default)]) read from common/checks.cpp."""
    src = open(os.path.join(ROOT, "common/checks.cpp")).read()
    keys = sorted(set(re.findall(r'"((?:host|mpi|net|gpu|nccl|rdma|ib)\.[a-z_]+)"', src)))
    params = re.findall(r'p\("(\w+)", P::(\w+), ([^,]+),', src)
    return keys, params


def params_corpus():
    keys, params = catalog()
    seeds = []
    for name, _, default in params:
        default = default.strip()
        try:
            value = json.loads(default)
        except ValueError:
            value = 1024 if "<<" in default or "kGiB" in default else default
        seeds.append(dumps({name: value}))
    seeds += [dumps({"deadline_s": 3}), dumps({"deadline_s": "x"}), dumps({"max_bytes": "64M", "placement": "out"}),
              dumps({"max_bytes": "64Q"}), dumps({"iters": 2.5}), dumps({"iters": 0}), dumps([]), dumps("8G"),
              dumps({"nccl.all_reduce": {"max_bytes": "64M", "placement": "out"}, "gpu.burn": {"deadline_s": 30}})]
    seeds += [dumps({k: {}}) for k in keys]
    return seeds


# Inputs that once failed (docs/fuzzing.md, "What the fuzzing found"), kept so that they stay fixed.
REGRESSIONS = {
    "slurm": ["sdedebg|de[ug*|up|-4|idle|node[2-4]\n",
              "a|b|up|2147483647|idle|\na|b|up|1|idle|",
              "1" * 64 + "\n",
              "NodeName=a State=IDLE Reason=a [x[y@z]"],
    "messages": ['{"type":"round","id":492233720368547758072,"tests":[]}', '{"type":"ack","seq":1e300}',
                 '{"type":"done","round_id":1,"rank":4294967297}',
                 '{"last_seqV":40,"type":"records"}\n{}', '{"type":"records","last_seq":-1}\n{}'],
    "records": ['{"record":"end","test":"t","host":"h","status":"pass","rank":0,"round_id":' + "4" * 96 + "}"],
    "params": ['{"max_bytes":9223372036854775807}', '{"max_bytes":18446744073709551615}', '"8388608T"'],
    "hostlist": ["n1\nn01", "n0\nn00\nn000\nn1", "a[0-999999999999999999][0-999999999999999999]"],
}


def write_dict(target, tokens):
    path = os.path.join(ROOT, "tests", "fuzz", target + ".dict")
    with open(path, "w") as f:
        f.write("# libFuzzer dictionary for fuzz_%s, written by tests/fuzz/make-corpus.py\n" % target)
        for t in sorted(set(tokens)):
            f.write('"%s"\n' % "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else "\\x%02x" % ord(c) for c in t))


def json_tokens():
    src = open(os.path.join(ROOT, "common/findings.cpp")).read()
    codes = re.findall(r'"([a-z]+\.[a-z_.]+)"', src)
    fields = set()
    for m in protocol_messages():
        stack = [m]
        while stack:
            v = stack.pop()
            if isinstance(v, dict):
                fields.update(v.keys())
                stack += v.values()
            elif isinstance(v, list):
                stack += v
    words = ["challenge", "hello", "welcome", "round", "result", "end", "ack", "done", "heartbeat", "error", "bye",
             "pass", "fail", "skip", "timeout", "info", "warning", "critical", "record", "severity", "summary",
             "next_step", "confidence", "evidence"]
    return (['"%s"' % w for w in list(fields) + words + codes] +
            ["{", "}", "[", "]", ":", ",", "null", "true", "false", "-1", "1e308", "-0", "18446744073709551615",
             "9223372036854775807", "2147483648", "1.5", '""', '"\\u0000"'])


def main():
    keys, params = catalog()
    seeds = {
        "slurm": slurm_outputs(),
        "records": recorded_lines() + findings(),
        "messages": messages_corpus(),
        "frame": frame_corpus(),
        "hostlist": hostlist_corpus(),
        "params": params_corpus(),
    }
    n = {t: write(t, items + REGRESSIONS.get(t, [])) for t, items in seeds.items()}
    jt = json_tokens()
    for t in ("messages", "frame", "records"):
        write_dict(t, jt)
    write_dict("params", jt + ['"%s"' % k for k in keys] + ['"%s"' % p[0] for p in params] +
               ['"%s"' % s for s in ("K", "M", "G", "T", "KB", "64M", "out", "in", "both")])
    write_dict("hostlist", ["[", "]", ",", "-", "0", "00", "9", "999999999999999999", "[0-9]", "n[1-2]", "a,b"])
    write_dict("slurm", [k + "=" for k in ("NodeName", "State", "Reason", "NodeAddr", "NodeHostName", "CPUTot",
                                           "Partitions", "JobId", "JobState", "NodeList", "ExitCode", "SwitchName",
                                           "Level", "LinkSpeed", "Nodes", "Switches")] +
               ["|", "\n", " ", "+", "(null)", "None", "IDLE", "DRAIN", "NOT_RESPONDING", "RUNNING", "PENDING",
                "CANCELLED by 0", "0:15", "[root@2026-11-30T04:21:47]", "node[1-4]", "debug*", "idle*", ";kiln",
                "2147483647", "-1"])
    for t, k in n.items():
        print("%-9s %3d seeds" % (t, k))


if __name__ == "__main__":
    main()
