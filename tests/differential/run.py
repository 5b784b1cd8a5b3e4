#!/usr/bin/env python3
"""tests/differential/run.py: our broker against Apache Kafka 3.9.1, request by request.

Usage (from the repository root):

  tests/differential/run.py --all                 # the whole corpus (every common API version)
  tests/differential/run.py                       # the CI subset (lowest, first flexible, highest)
  tests/differential/run.py --broker BIN --work DIR --timeout S [--all] [--only metadata,produce]

Starts Apache Kafka 3.9.1 single-node (kafka_server.py) and our broker
(tests/integration/harness.py's Broker), asks both for ApiVersions, and runs
the corpus (corpus.py) against both in the same order: every API key and
version both advertise, valid and invalid inputs. Each pair of answers is
decoded with the schema codec (schema_codec.py, from Kafka's JSON schemas),
normalised (engine.py says what and why) and compared field by field.

Every difference is printed as a table row (API, version, case, field path,
Kafka's value, ours) and written to WORK/differences.md. A difference listed
in known_differences.json (each entry with its reason) is accepted; any other
fails the run, as does a missing schema directory or Kafka build, a broker
that dies, or our broker not stopping cleanly. Exit 0 = no unexplained
difference.
"""

import argparse
import json
import os
import shutil
import signal
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

import corpus as corpus_mod  # noqa: E402
import engine  # noqa: E402
import harness  # noqa: E402
import kafka_server  # noqa: E402
import schema_codec as sc  # noqa: E402

ALLOWLIST = os.path.join(HERE, "known_differences.json")
SYNC_TIMEOUT = 30.0


class Corpus:
    """What scenarios see: the versions to cover, and step()/sync() to add to the run."""

    def __init__(self, schemas, common, full):
        self.schemas, self.common, self.full = schemas, common, full
        self.items = []

    def has(self, api):
        return api in self.common

    def versions(self, api):
        if api not in self.common:
            return []
        lo, hi = self.common[api]
        if self.full:
            return list(range(lo, hi + 1))
        flex = self.schemas.request(api).flexible.lo
        return sorted({lo, hi} | ({flex} if lo <= flex <= hi else set()))

    def clamp(self, api, v):
        lo, hi = self.common[api]
        return max(lo, min(hi, v))

    def step(self, api, version, case, body=None, raw_body=None, capture=None, header_version=None,
             timeout=None, full_only=False):
        """full_only: a case that costs its timeout on one broker (no answer), run with --all only."""
        if api not in self.common or (full_only and not self.full):
            return
        if raw_body is None and header_version is None:
            lo, hi = self.common[api]
            assert lo <= version <= hi, "corpus bug: %s v%d outside the common range %d-%d" % (
                self.schemas.api_names[api], version, lo, hi)
        self.items.append(engine.Step(api, version, case, body, raw_body, capture, header_version, timeout))

    def sync(self, what, ready):
        self.items.append(("sync", what, ready))


def wait_on(side, what, ready):
    end = time.monotonic() + SYNC_TIMEOUT
    polls = 0
    while time.monotonic() < end and polls < 2000:
        polls += 1
        try:
            if ready(side):
                return True
        except Exception:  # noqa: BLE001 - a broker not ready yet answers oddly; retried until the bound
            pass
        time.sleep(0.05)
    return False


def run_step(side, step, schemas):
    try:
        body = step.body(side) if callable(step.body) else step.body
        raw = step.raw_body(side) if callable(step.raw_body) else step.raw_body
    except Exception as e:  # noqa: BLE001 - the side lacks state an earlier answer should have given
        side.last_request = None
        return engine.Outcome("no_request", detail="request not built: %r" % e)
    side.last_request = body
    out = side.send(step.api, step.version, body, raw_body=raw, header_version=step.header_version,
                    timeout=step.timeout)
    if out.kind == "answer" and step.capture is not None:
        try:
            step.capture(side, out.body)
        except Exception:  # noqa: BLE001 - the next step notices the missing state
            pass
    return out


def advertised(side):
    out = side.send(18, 3, {"ClientSoftwareName": "ck-diff", "ClientSoftwareVersion": "1.0"})
    harness.check(out.kind == "answer" and out.body["ErrorCode"] == 0,
                  "%s: ApiVersions v3 failed (%s %s)" % (side.name, out.kind, out.detail))
    return {k["ApiKey"]: (k["MinVersion"], k["MaxVersion"]) for k in out.body["ApiKeys"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    default_broker = next((p for p in (os.path.join(sc.REPO, "build", d, "bin", "ciuickafka")
                                       for d in ("asan", "release", "debug")) if os.path.exists(p)), None)
    ap.add_argument("--broker", default=default_broker, help="the ciuickafka binary (default: build/asan's)")
    ap.add_argument("--work", default=os.path.join(sc.REPO, "build", "differential-work"))
    ap.add_argument("--timeout", type=int, default=None, help="wall-clock bound (default 110 s, 900 s with --all)")
    ap.add_argument("--all", action="store_true", help="every version both advertise, not the CI subset")
    ap.add_argument("--only", default="", help="comma-separated scenario names (for debugging)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory on success")
    args = ap.parse_args()
    timeout = args.timeout or (900 if args.all else 110)
    work = os.path.join(os.path.abspath(args.work), "differential_" + ("all" if args.all else "ci"))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    def on_alarm(signum, frame):
        raise harness.TestFailure("differential run exceeded its %ds wall-clock bound" % timeout)
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(timeout)

    kafka = ours = None
    ok = False
    t0 = time.monotonic()
    try:
        d = sc.schema_dir()
        harness.check(d is not None, "Kafka's message schemas not found (../shared/kafka-protocol/messages "
                      "beside the repository, or CK_SCHEMA_DIR)")
        schemas = sc.Schemas(d)
        harness.check(args.broker and os.access(args.broker, os.X_OK), "broker binary %r not found" % args.broker)
        kafka = kafka_server.KafkaBroker(work)
        kafka_error = []

        def start_kafka():
            try:
                kafka.start()
            except BaseException as e:  # noqa: BLE001 - re-raised on the main thread
                kafka_error.append(e)
        th = threading.Thread(target=start_kafka, daemon=True)
        th.start()
        ours = harness.Broker(args.broker, work, overrides=kafka_server.SHARED_OVERRIDES, name="ours")
        ours.start()
        th.join(timeout)
        if kafka_error:
            raise kafka_error[0]
        harness.check(kafka.alive(), "Kafka is not running")
        print("[diff] both brokers up after %.1fs" % (time.monotonic() - t0), flush=True)
        ok = compare(schemas, kafka, ours, args, work)
        harness.check(kafka.alive(), "Kafka died during the run")
        harness.check(ours.alive(), "our broker died during the run (exit %s)" % (ours.proc and ours.proc.poll()))
        ours.stop()
    except BaseException as e:  # noqa: BLE001 - every failure is reported the same way
        signal.alarm(0)
        print("FAIL: %s" % e, flush=True)
        traceback.print_exc()
        if ours is not None:
            ours.dump_log()
        if kafka is not None:
            kafka.dump_log(20)
        ok = False
    finally:
        signal.alarm(0)
        if kafka is not None:
            kafka.kill()
        if ours is not None and ours.proc is not None:
            ours.kill()
    if ok:
        print("PASS (%.1fs)" % (time.monotonic() - t0), flush=True)
        if not args.keep:
            shutil.rmtree(os.path.join(work, "kafka"), ignore_errors=True)
            shutil.rmtree(os.path.join(work, "ours"), ignore_errors=True)
        sys.exit(0)
    print("FAIL (%.1fs); work directory kept: %s" % (time.monotonic() - t0, work), flush=True)
    sys.exit(1)


def compare(schemas, kafka, ours, args, work):
    sides = [engine.Side("kafka", kafka.port, schemas), engine.Side("ours", ours.port, schemas)]
    adv = [advertised(s) for s in sides]
    name = schemas.api_names
    common = {}
    advert_rows = []
    for k in sorted(set(adv[0]) | set(adv[1])):
        a, b = adv[0].get(k), adv[1].get(k)
        if a and b and max(a[0], b[0]) <= min(a[1], b[1]):
            common[k] = (max(a[0], b[0]), min(a[1], b[1]))
        if a != b:
            advert_rows.append((k, name.get(k, "?"), "%d-%d" % a if a else "-", "%d-%d" % b if b else "-"))
    advert_keys = {r[0] for r in advert_rows}
    allow = engine.Allowlist(ALLOWLIST)
    c = Corpus(schemas, common, args.all)
    only = set(x for x in args.only.split(",") if x)
    for scenario in corpus_mod.SCENARIOS:
        if not only or scenario.__name__ in only:
            scenario(c)

    rows, per_api, cases = [], {}, set()
    spent = {"kafka": {}, "ours": {}}
    steps = 0
    for item in c.items:
        if isinstance(item, tuple):
            _, what, ready = item
            got = [wait_on(s, what, ready) for s in sides]
            if got != [True, True]:
                rows.append(("(sync)", 0, what, "<ready>", str(got[0]), str(got[1])))
            continue
        steps += 1
        api = name[item.api]
        cases.add((api, item.case))
        per_api.setdefault(api, set()).add(item.version)
        outs = [run_step(s, item, schemas) for s in sides]
        if os.environ.get("CK_DIFF_DEBUG") in (api, "all"):
            for s, o in zip(sides, outs):
                print("[debug] %s v%d %r %s: %s %s" % (api, item.version, item.case, s.name, o.kind,
                                                      o.body if o.body is not None else o.detail))
        for s, o in zip(sides, outs):
            spent[s.name][api] = spent[s.name].get(api, 0.0) + o.elapsed
        norm = [engine.normalise(s, schemas, item.api, item.version, o, s.last_request)
                for s, o in zip(sides, outs)]
        for o in outs:
            if o.kind in ("encode_error", "no_request") and outs[0].kind == outs[1].kind:
                raise harness.TestFailure("corpus bug at %s v%d %r: %s" % (api, item.version, item.case, o.detail))
        for path, a, b in engine.diff(norm[0], norm[1]):
            if item.api == 18 and advertised_key(path) in advert_keys:
                continue  # the same fact as an "advertised range" row below, listed once there
            rows.append((api, item.version, item.case, path, a, b))

    # Every API both advertise must have corpus steps at every version the run
    # covers: an API newly served by both fails here until it gets cases.
    if not args.only:
        for k in sorted(common):
            want = set(c.versions(k))
            missing = sorted(want - per_api.get(name[k], set()))
            if missing:
                rows.append((name[k], missing[0], "(corpus)", "<no step>", "advertised by both",
                             "no corpus step at v%s" % ",".join(map(str, missing))))

    # The advertised ranges are differences too (ApiVersions' answer), listed apart.
    for k, api, a, b in advert_rows:
        rows.append(("ApiVersions", -1, "advertised range", "ApiKeys[ApiKey=%d %s]" % (k, api), a, b))

    unexplained, explained = [], []
    for r in rows:
        e = allow.match(r[0], r[1], r[2], r[3], r[4], r[5])
        (explained if e else unexplained).append((r, e))
    write_table(os.path.join(work, "differences.md"), rows, allow, unexplained, explained, advert_rows,
                steps, sides, per_api)
    print("[diff] APIs both advertise: %d; only Kafka: %s; only ours: %s" % (
        len(common), ", ".join("%s(%d)" % (name.get(k, "?"), k) for k in sorted(set(adv[0]) - set(adv[1]))),
        ", ".join("%s(%d)" % (name.get(k, "?"), k) for k in sorted(set(adv[1]) - set(adv[0])))))
    print("[diff] covered: " + ", ".join("%s v%s" % (a, ",".join(map(str, sorted(v)))) for a, v in sorted(per_api.items())))
    print("[diff] %d steps (%d distinct cases), %d requests to Kafka, %d to ours; %d differences: "
          "%d known (%d entries used of %d), %d unexplained" % (
              steps, len(cases), sides[0].requests, sides[1].requests, len(rows), len(explained),
              sum(1 for e in allow.entries if e["used"]), len(allow.entries), len(unexplained)))
    for who in ("kafka", "ours"):
        top = sorted(spent[who].items(), key=lambda x: -x[1])[:5]
        print("[diff] time in requests, %s: %.1fs (most: %s)" % (who, sum(spent[who].values()), ", ".join(
            "%s %.1fs" % x for x in top)))
    if unexplained:
        print("[diff] UNEXPLAINED differences (fix the broker, or add to known_differences.json with a reason):")
        print(table_header())
        for r, _ in unexplained[:400]:
            print(table_row(r))
        if len(unexplained) > 400:
            print("... and %d more (all in %s)" % (len(unexplained) - 400, os.path.join(work, "differences.md")))
    by_reason = {}
    for r, e in explained:
        by_reason.setdefault(e["reason"], []).append(r)
    print("[diff] known differences by reason:")
    for reason, rs in sorted(by_reason.items(), key=lambda x: -len(x[1])):
        print("  %4d  %s" % (len(rs), reason[:150]))
    if args.all:
        for e in allow.entries:
            if not e["used"]:
                print("[diff] note: known difference never seen in this run: %s" % json.dumps(
                    {k: v for k, v in e.items() if k != "used"}))
    return not unexplained


def advertised_key(path):
    """ApiKeys[ApiKey=17]... -> 17 (None for another path)."""
    if not path.startswith("ApiKeys[ApiKey="):
        return None
    return int(path[len("ApiKeys[ApiKey="):].split("]")[0])


def table_header():
    return "| API | v | case | field | Kafka 3.9.1 | ours |\n|---|---|---|---|---|---|"


def table_row(r):
    esc = [str(x).replace("|", "\\|") for x in r]
    if r[1] == -1:
        esc[1] = "*"
    return "| " + " | ".join(esc) + " |"


def write_table(path, rows, allow, unexplained, explained, advert_rows, steps, sides, per_api):
    with open(path, "w") as f:
        f.write("# Differences: Apache Kafka 3.9.1 vs ours\n\n%d steps, %d differences, %d unexplained\n\n" % (
            steps, len(rows), len(unexplained)))
        f.write("## Unexplained\n\n" + table_header() + "\n")
        for r, _ in unexplained:
            f.write(table_row(r) + "\n")
        f.write("\n## Known (known_differences.json)\n\n| API | v | case | field | Kafka 3.9.1 | ours | reason |\n"
                "|---|---|---|---|---|---|---|\n")
        for r, e in explained:
            f.write(table_row(r) + " %s |\n" % e["reason"].replace("|", "\\|"))
    print("[diff] table of every difference: %s" % path)


if __name__ == "__main__":
    main()
