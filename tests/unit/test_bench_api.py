"""bench.api: wrk's answers are counted by status, and a flood of errors is never reported as throughput."""

from __future__ import annotations

import shutil
import time

import pytest

from bench import api as bench


def _run(rps: float, p99: float, non_2xx: int = 0) -> bench.Run:
    return bench.Run(rps, p99 / 2, p99, non_2xx, {})


def _row(server: str, kind: str | None, *runs: bench.Run) -> bench.Row:
    row = bench.Row(server, server, "GET", "/", None, "/", kind=kind)  # type: ignore[arg-type]
    row.runs.extend(runs)
    return row


def test_the_table_gives_medians_ratios_to_the_baseline_and_the_targets():
    rows = [
        _row("bare", None, _run(1000, 5), _run(900, 6), _run(1100, 4)),
        _row("fast", "GET", _run(400, 20), _run(350, 25), _run(300, 40)),
        _row("errors", "POST", _run(500, 10, non_2xx=3), _run(500, 10), _run(500, 10)),
    ]
    lines = bench.table(rows).splitlines()
    assert lines[2].startswith("| bare | 1,000 | 1,000 / 900 / 1,100 | 2.5 | 5.0 | 0 | 1.00 |")
    assert "| fast | 350 |" in lines[3] and "| 0.35 |" in lines[3] and "**met**" in lines[3]
    # Its ratio and p99 would pass, but 3 answers were not 2xx.
    assert "| 3 | 0.50 |" in lines[4] and "not met" in lines[4]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not installed")
def test_wrk_counts_2xx_and_the_rest_separately(tmp_path):
    server = bench.Server(
        "bare", [bench.gunicorn("bench.api_apps:bare", workers=1)], {}, "/", tmp_path / "log"
    )
    script = bench.write_script(tmp_path / "s.lua", method="GET", paths=["/"], secrets=["a", "b"], body=None)
    missing = bench.write_script(
        tmp_path / "m.lua", method="GET", paths=["/missing"], secrets=["a"], body=None
    )
    server.start()
    try:
        ok = bench.wrk(server.url + "/", script, threads=1, connections=2, duration=1)
        bad = bench.wrk(server.url + "/missing", missing, threads=1, connections=2, duration=1)
    finally:
        server.stop()
    assert ok.rps > 0 and ok.non_2xx == 0 and ok.detail["n2xx"] == ok.detail["requests"]
    assert bad.rps == 0 and bad.non_2xx == bad.detail["n4xx"] == bad.detail["requests"] > 0


def test_the_in_process_cpu_benchmark_runs_both_requests_and_reports_each(capsys, monkeypatch):
    from bench import api_cpu

    monkeypatch.setattr(api_cpu, "SLICES", 2)
    assert api_cpu.main(["--jobs", "200", "--requests", "40"]) == 0
    out = capsys.readouterr().out
    assert "GET /sandbox/v1/jobs?link_token_id=" in out and "POST /sandbox/v1/link_tokens" in out
    assert out.count(" ms (") == 2  # each answered 2xx throughout, or main raises


def test_the_console_pages_benchmark_runs_every_page(capsys):
    """A smoke run: a visitor's workspace is set up, every page answers (the benchmark asserts 200 or 204)."""
    from bench import console_pages

    # 1 is the 100 ms target missed: a measure of the machine (a loaded one took 406 ms), not of the pages.
    assert console_pages.main(["--events", "60", "--baseline-events", "20", "--runs", "1"]) in (0, 1)
    out = capsys.readouterr().out
    assert "Slowest median" in out and out.count("| Event log") >= 5


def test_the_crowd_benchmark_reports_the_api_alone_and_under_the_crowd():
    from bench import crowd

    def calls(*ms: float) -> crowd.Calls:
        return crowd.Calls([m / 1000 for m in ms], [200] * len(ms))

    rounds = [crowd.Round(calls(5, 6, 20), calls(30, 40, 300), 80.0, 0) for _ in range(3)]
    text = crowd.table(rounds)
    assert "| the customer while 48 clients load `/` | 9 |" in text and "**met**" in text
    rounds[1] = crowd.Round(calls(5, 6, 20), calls(30, 40, 300), 80.0, 2)  # two page 5xx: not met
    assert "**not met**" in crowd.table(rounds)


def test_a_console_row_waits_for_its_own_worker_to_report(tmp_path):
    """Measured while the worker process still imported the app, a row lost a quarter of a core to it."""
    import json
    import subprocess
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    health = {"worker": {"ok": False, "pid": None}}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps(health).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    ours = subprocess.Popen(["sleep", "30"], start_new_session=True)
    stranger = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        server = bench.Server("run", [], {}, "/", tmp_path / "log", port=httpd.server_address[1])
        server.procs.append(ours)
        server.wait_for_worker = True
        assert not server._worker_is_up()  # no heartbeat yet
        health["worker"] = {"ok": True, "pid": stranger.pid}  # an earlier run's worker, still fresh
        assert not server._worker_is_up()
        health["worker"] = {"ok": True, "pid": ours.pid}
        assert server._worker_is_up()
        server.wait_for_worker = False
        health["worker"] = {"ok": False, "pid": None}
        assert server._worker_is_up()  # rows without a worker do not wait
    finally:
        httpd.shutdown()
        httpd.server_close()
        for proc in (ours, stranger):
            proc.kill()
            proc.wait()


def test_instruction_counts_are_read_from_cachegrind_and_the_counted_work_runs(tmp_path):
    """bench.api_instructions: the `I refs` total is parsed, and the child's workload answers 2xx throughout."""
    import json

    from bench import api_instructions

    assert api_instructions.instructions("==1== \n==1== I   refs:      6,947,195,752\n") == 6_947_195_752
    with pytest.raises(RuntimeError):
        api_instructions.instructions("valgrind: command not found")
    data = bench.seed(f"sqlite:///{tmp_path / 'console.db'}", keys=3, jobs=20, jobs_per_token=10)
    (tmp_path / "data.json").write_text(json.dumps({"secrets": data.secrets, "tokens": data.link_token_ids}))
    for kind in ("GET", "POST"):
        api_instructions.call_app(tmp_path, kind, calls=3, warmup=2)  # raises unless every call answered 2xx


def test_the_startup_benchmark_times_a_start_to_ready_and_the_cpu_of_the_whole_tree(capsys):
    from bench import startup

    summary = startup.main(["--starts", "1", "--processes", "1"])
    assert 0 < summary["ready_s"] <= summary["total_s"]
    # The tree's CPU time: more than a bare interpreter's (the app is built in the master and the worker).
    assert summary["cpu_s"] > 2 * summary["baseline_cpu_s"] > 0
    assert "| 1 |" in capsys.readouterr().out


def test_the_neighbours_benchmark_splits_a_call_by_its_answer_s_server_timing():
    """What `bench.neighbours` reads of an answer is what the run slots write: a call's time splits into its
    wait for a slot, the app, and the rest (outside the app, after the client's own wait for a CPU)."""
    from bench.neighbours import TenantB, call_split, split_call, split_rows
    from console.runslots import RunSlots, RunSlotsMiddleware

    def app(environ, start_response):
        time.sleep(0.01)  # in the app, without CPU
        start_response("200 OK", [])
        return [b"ok"]

    headers: list = []
    served = RunSlotsMiddleware(app, RunSlots(2))
    list(served({"PATH_INFO": "/v1/jobs"}, lambda status, h, exc_info=None: headers.extend(h)))
    (timing,) = [value for name, value in headers if name == "Server-Timing"]
    queued, in_app, cpu, own_wait = split_call(timing, client_wait_ms=2.0)
    assert queued == 0.0 and in_app >= 10.0 and cpu < in_app and own_wait == 2.0
    assert split_call('runslot;desc="queued";dur=7.5, app;dur=1.2, cpu;dur=0.9', 0.0) == (7.5, 1.2, 0.9, 0.0)

    # 100 calls of 5 ms (1 in the app, 1 queued: 3 outside), and one of 50 ms that waited 40 outside.
    phase = TenantB(
        api_seconds=[0.005] * 100 + [0.050],
        api_parts=[(1.0, 1.0, 0.8, 0.0)] * 100 + [(1.0, 4.0, 0.8, 5.0)],
    )
    split = call_split(phase)
    assert split["outside"]["p50"] == pytest.approx(3.0)
    assert split["outside"]["slowest_mean"] == pytest.approx(40.0)
    assert split["own_wait"]["slowest_mean"] == pytest.approx(5.0)
    rows = split_rows(split, split)
    assert len(rows) == 4 and "outside the app" in rows[0] and "3.0 / 3.0 / 40.0 ms" in rows[0]


def test_a_benchmark_server_s_port_is_free_and_outside_the_kernel_s_ephemeral_range():
    """bind(0) hands out ephemeral ports, which the test suite's live servers took again before the benchmark's
    server could bind its one (seen: `console run` refused to start beside a CI run)."""
    import socket

    port = bench.free_port()
    assert port in bench.PORTS
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))  # free: nothing holds it
