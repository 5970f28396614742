"""Tests of the H200 report joiners (bench_report.py, accuracy_table.py) on synthetic inputs: peers, floors,
the speed-target lines and the accuracy table. Run by CTest (tools.h200_reports); no GPU, no torch."""
import json
import pathlib
import subprocess
import sys
import tempfile
import unittest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_report  # noqa: E402


def bench_row(kernel, T, ms, nbytes=1e8):
    name = f"{kernel}/prefill/T={T}/manual_time"
    return {"name": name + "_median", "run_name": name, "aggregate_name": "median", "time_unit": "ms",
            "real_time": ms, "T": T, "B": 1, "H": 16, "D": 128, "bytes": nbytes}


def peer(name, T, ms):
    return {"peer": name, "kind": "prefill", "T": T, "B": 1, "H": 16, "D": 128, "ms": ms}


def decode_row(kernel, kind, bh, ms, nbytes):
    name = f"{kernel}/{kind}/BH={bh}/manual_time"
    return {"name": name + "_median", "run_name": name, "aggregate_name": "median", "time_unit": "us",
            "real_time": ms * 1e3, "T": 1, "B": bh, "H": 1, "D": 128, "bytes": nbytes}


class BenchReport(unittest.TestCase):
    def run_report(self, rows, peers, bounds=None, matmul_tflops=800.0, device="H200"):
        with tempfile.TemporaryDirectory() as d:
            d = pathlib.Path(d)
            extra = []
            if bounds is not None:
                (d / "bounds.json").write_text(json.dumps(bounds))
                extra = ["--bounds", str(d / "bounds.json")]
            (d / "k.json").write_text(json.dumps({"benchmarks": rows}))
            (d / "p.json").write_text(json.dumps({"device": device, "torch": "t", "fla": "0.6", "rows": peers,
                                                  "copy_bandwidth_GBps": 4000.0, "bf16_matmul_TFLOPs": matmul_tflops,
                                                  "vla_sequential_pytorch": {"T": 2048, "ms": 100.0}}))
            subprocess.run([sys.executable, str(HERE / "bench_report.py"), "--kernels", str(d / "k.json"), "--peers",
                            str(d / "p.json"), "--tree-hash", "abc", "--json", str(d / "b.json"), "--markdown",
                            str(d / "b.md")] + extra, check=True, capture_output=True)
            return json.loads((d / "b.json").read_text()), (d / "b.md").read_text()

    def test_the_title_names_the_card_the_peers_ran_on(self):
        _, md = self.run_report([bench_row("gdn-chunked", 8192, 1.0)], [peer("fla-chunk-gdn", 8192, 0.5)],
                                device="NVIDIA H100 80GB HBM3")
        self.assertEqual(md.splitlines()[0], "# larc kernels on the NVIDIA H100 80GB HBM3: speed")

    def test_peers_of_each_kernel_family(self):
        self.assertEqual(bench_report.peer_of("gdn-chunked", "prefill"), "fla-chunk-gdn")
        self.assertEqual(bench_report.peer_of("kla-chunked", "prefill"), "fla-chunk-gdn")
        self.assertEqual(bench_report.peer_of("gdn-chunked-io", "prefill"), "fla-chunk-gdn")
        self.assertEqual(bench_report.peer_of("kla-chunked-io", "prefill"), "fla-chunk-gdn")
        self.assertEqual(bench_report.peer_of("log-linear-chunked", "prefill"), "fla-chunk-log-linear")
        self.assertEqual(bench_report.peer_of("log-linear-gdn-chunked", "prefill"), "sdpa-causal")
        self.assertEqual(bench_report.peer_of("gdn-fused-recurrent", "decode"), "fla-fused-recurrent-gdn")
        self.assertEqual(bench_report.peer_of("hla-fused-recurrent", "prefill"), "sdpa-causal")
        self.assertIsNone(bench_report.peer_of("la-fused-recurrent", "decode"))
        self.assertIsNone(bench_report.peer_of("gdn-chunked-backward-io", "prefill"))
        self.assertIsNone(bench_report.peer_of("gdn-fused-recurrent-backward", "prefill"))

    def test_tensor_flops_counts_the_products_of_one_chunk(self):
        # One chunk of 64 tokens, one head, D = 128: 5·64²·128 + 3·64·128² multiply-adds, 2 flops each.
        self.assertEqual(bench_report.tensor_flops("gdn-chunked", 64, 1, 128), 2 * (5 * 64 * 64 * 128 + 3 * 64 * 128 * 128))
        self.assertEqual(bench_report.tensor_flops("gdn-chunked", 65, 1, 128), 2 * bench_report.tensor_flops("gdn-chunked", 64, 1, 128))
        self.assertIsNone(bench_report.tensor_flops("gdn-fused-recurrent", 64, 1, 128))
        # Two chunks: chunk 1 reads one chunk level.
        c2d, cd2 = 64 * 64 * 128, 64 * 128 * 128
        self.assertEqual(bench_report.tensor_flops("log-linear-chunked", 128, 1, 128), 2 * (2 * (2 * c2d + cd2) + cd2))
        self.assertEqual(bench_report.tensor_flops("hla-normalized-chunked", 64, 2, 128),
                         2 * 2 * (5 * cd2 + 5 * c2d + 64 ** 3))
        self.assertEqual(bench_report.live_levels(8), 12)  # popcounts of 0..7

    def test_floor_is_the_larger_of_bandwidth_and_compute(self):
        report, _ = self.run_report([bench_row("gdn-chunked", 8192, 0.5, nbytes=4e6)], [peer("fla-chunk-gdn", 8192, 0.4)])
        row = report["rows"][0]
        compute_ms = bench_report.tensor_flops("gdn-chunked", 8192, 16, 128) / 800e12 * 1e3
        self.assertAlmostEqual(row["floor_ms"], max(4e6 / 4000e9 * 1e3, compute_ms))
        self.assertAlmostEqual(row["of_floor"], row["floor_ms"] / 0.5)
        self.assertAlmostEqual(row["speedup"], 0.4 / 0.5)

    def test_targets_say_met_or_not_from_the_measured_rows(self):
        rows = [bench_row("gdn-chunked", 8192, 0.4), bench_row("gdn-chunked", 32768, 2.0),
                bench_row("log-linear-chunked", 65536, 10.0)]
        peers = [peer("fla-chunk-gdn", 8192, 0.44), peer("fla-chunk-gdn", 32768, 1.0),
                 peer("fla-chunk-log-linear", 65536, 35.0)]
        _, md = self.run_report(rows, peers)
        self.assertIn("gdn-chunked vs FLA chunk GDN (≥ 1.0× at every T ≥ 8k, aim 1.3×): worst 0.50× at T = 32768 — NOT met", md)
        self.assertIn("log-linear-chunked vs FLA chunk log-linear at T = 64k (≥ 3×): 3.50× — met", md)
        _, md = self.run_report(rows[:1], peers[:1])
        self.assertIn("worst 1.10× at T = 8192 — met", md)

    def test_io_chunked_target_is_judged_at_1_3x_with_a_1x_floor(self):
        rows = [bench_row("gdn-chunked-io", 2048, 1.0), bench_row("gdn-chunked-io", 8192, 0.3),
                bench_row("gdn-chunked-io", 32768, 1.0), bench_row("kla-chunked-io", 8192, 0.3),
                bench_row("gdn-chunked", 8192, 0.4)]
        peers = [peer("fla-chunk-gdn", 2048, 0.1), peer("fla-chunk-gdn", 8192, 0.44), peer("fla-chunk-gdn", 32768, 1.2)]
        report, md = self.run_report(rows, peers)
        self.assertTrue(all(r["peer"] == "fla-chunk-gdn" for r in report["rows"]))
        # T = 2048 is below 8k: its 0.10× does not count; the worst from 8k is 1.20× at 32768.
        self.assertIn("- gdn-chunked-io vs FLA chunk GDN (≥ 1.3× FLA's chunk_gated_delta_rule at every T ≥ 8k "
                      "(floor 1.0×)): worst 1.20× at T = 32768 — NOT met (above the 1.0× floor).", md)
        self.assertIn("- kla-chunked-io vs FLA chunk GDN (≥ 1.3× FLA's chunk_gated_delta_rule at every T ≥ 8k "
                      "(floor 1.0×)): worst 1.47× at T = 8192 — met.", md)
        # The fp32-grade kernel keeps its own line.
        self.assertIn("- gdn-chunked vs FLA chunk GDN (≥ 1.0× at every T ≥ 8k, aim 1.3×): worst 1.10× at T = 8192 — met.", md)
        _, md = self.run_report([bench_row("gdn-chunked-io", 8192, 0.5)], peers[1:2])
        self.assertIn("worst 0.88× at T = 8192 — NOT met (below the 1.0× floor).", md)

    def test_decode_target_is_judged_per_decode_kind_with_the_l2_caveat(self):
        # 17.3 MB a step at B×H = 132: 0.0068 ms is 63.6% of 4000 GB/s, 0.0094 ms 46%.
        step = 17.3e6
        rows = [decode_row("gdn-fused-recurrent", "decode", 132, 0.0094, step),
                decode_row("gdn-fused-recurrent", "decode", 16, 0.006, step / 8.25),
                decode_row("gdn-fused-recurrent-decode-graph", "decode-graph", 132, 0.0068, step),
                decode_row("gdn-fused-recurrent-decode-graph", "decode-steps", 132, 0.0050, step),
                decode_row("gdn-fused-recurrent-decode-graph", "decode-steps", 1024, 0.1, step * 1024 / 132)]
        peers = [dict(peer("fla-fused-recurrent-gdn", 1, 0.04), kind="decode", B=132, H=1)]
        report, md = self.run_report(rows, peers)
        self.assertIn("- Decode (decode: one launch a step, 32 back-to-back launches on rotated copies; the baseline of the "
                      "multi-step paths) ≥ 60% of the bandwidth floor at batch×heads ≥ 132: worst 46.0% "
                      "(gdn-fused-recurrent, B×H = 132) — NOT met.", md)
        self.assertIn("- Decode (decode-graph: 32 steps replayed from one CUDA graph with programmatic dependent launches, "
                      "on rotated copies) ≥ 60% of the bandwidth floor at batch×heads ≥ 132: worst 63.6% "
                      "(gdn-fused-recurrent-decode-graph, B×H = 132) — met.", md)
        # decode-steps: the worst of B×H = 132 (86.5%) and 1024 (33.5%).
        self.assertIn("(gdn-fused-recurrent-decode-graph, B×H = 1024) — NOT met.\n  Caveat: decode-steps keeps one state", md)
        self.assertIn("| gdn-fused-recurrent-decode-graph | decode-steps | 1 | 132 |", md)
        graph = [r for r in report["rows"] if r["kind"] == "decode-graph"][0]
        self.assertEqual(graph["peer"], "fla-fused-recurrent-gdn")  # FLA's one-launch decode step
        self.assertAlmostEqual(graph["speedup"], 0.04 / 0.0068)
        self.assertIn("Chunked rows: floor = max(bytes / bandwidth, tensor flops / 800 TFLOP/s", md)
        # A decode-only run measures no matmul rate: no compute floor is described.
        _, md = self.run_report(rows, peers, matmul_tflops=None)
        self.assertNotIn("TFLOP/s", md)

    def test_bounds_are_printed_for_the_targets_not_met_only(self):
        rows = [bench_row("gdn-chunked", 32768, 2.0), bench_row("log-linear-chunked", 65536, 10.0)]
        peers = [peer("fla-chunk-gdn", 32768, 1.0), peer("fla-chunk-log-linear", 65536, 35.0)]
        bounds = {"gdn-chunked": "instruction issue (ncu)", "log-linear-chunked": "chunk_output"}
        report, md = self.run_report(rows, peers, bounds)
        self.assertEqual(report["bounds"], bounds)
        self.assertIn("## What bounds the targets not met\n\n- **gdn-chunked**: instruction issue (ncu)", md)
        self.assertNotIn("chunk_output", md)  # its target is met
        _, md = self.run_report(rows, peers)
        self.assertNotIn("What bounds", md)


class AccuracyTable(unittest.TestCase):
    def test_rows_of_every_report_sorted_by_dtype_and_kernel(self):
        def result(kernel, dtype, rel, ok):
            return {"kernel": kernel, "dtype": dtype, "shape": "1,4096,4,128,128", "pass": ok,
                    "outputs": [{"output": "o", "rel_rms": rel, "baseline_rel_rms": 1.66e-3, "worst_ratio": 0.25}]}
        with tempfile.TemporaryDirectory() as d:
            d = pathlib.Path(d)
            (d / "larc.json").write_text(json.dumps({"tree_hash": "abc", "results": [result("gdn-chunked", "bf16", 1.66e-3, True)]}))
            (d / "fla.json").write_text(json.dumps({"results": [result("fla-chunk-gdn", "bf16", 3.36e-3, False)]}))
            subprocess.run([sys.executable, str(HERE / "accuracy_table.py"), str(d / "larc.json"), str(d / "fla.json"),
                            "--markdown", str(d / "a.md")], check=True)
            lines = (d / "a.md").read_text().splitlines()
        self.assertIn("`abc`", lines[2])
        body = [l for l in lines if l.startswith("| bf16")]
        self.assertEqual(body, ["| bf16 | fla-chunk-gdn | 0.00336 | 0.00166 | 0.25 | FAIL |",
                                "| bf16 | gdn-chunked | 0.00166 | 0.00166 | 0.25 | pass |"])


class JoinGateReports(unittest.TestCase):
    def join(self, parts, *extra):
        with tempfile.TemporaryDirectory() as d:
            d = pathlib.Path(d)
            paths = []
            for i, part in enumerate(parts):
                paths.append(str(d / f"gate_{i}.json"))
                pathlib.Path(paths[-1]).write_text(json.dumps(part))
            run = subprocess.run([sys.executable, str(HERE / "join_gate_reports.py"), *paths, "--json",
                                  str(d / "g.json"), "--markdown", str(d / "g.md"), *extra], capture_output=True, text=True)
            return run, ((d / "g.md").read_text() if run.returncode == 0 else "")

    def test_the_title_names_the_card_the_run_used(self):
        case = {"kernel": "k", "mechanism": "m", "dtype": "bf16", "pass": True, "worst_ratio": 0.5}
        part = {"tree_hash": "abc", "results": [case]}
        run, md = self.join([part, part], "--device", "NVIDIA H100 80GB HBM3")
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(md.splitlines()[0], "# larc gate on the NVIDIA H100 80GB HBM3")
        self.assertIn("2 cases, 0 failed", md)
        self.assertEqual(self.join([part])[1].splitlines()[0], "# larc gate")

    def test_parts_of_different_trees_or_policies_are_refused(self):
        case = {"kernel": "k", "mechanism": "m", "dtype": "bf16", "pass": True, "worst_ratio": 0.5}
        run, _ = self.join([{"tree_hash": "abc", "results": [case]}, {"tree_hash": "def", "results": [case]}])
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("different trees", run.stderr)
        eight, four = ({"tree_hash": "abc", "policy": {"k": 2, "rounding_draws": n}, "results": [case]} for n in (8, 4))
        run, _ = self.join([eight, four])
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("different tolerance policies", run.stderr)

    def test_the_joined_report_keeps_the_policy(self):
        case = {"kernel": "k", "mechanism": "m", "dtype": "bf16", "pass": True, "worst_ratio": 0.5}
        part = {"tree_hash": "abc", "policy": {"k": 2, "rounding_draws": 8}, "results": [case]}
        with tempfile.TemporaryDirectory() as d:
            d = pathlib.Path(d)
            (d / "a.json").write_text(json.dumps(part))
            subprocess.run([sys.executable, str(HERE / "join_gate_reports.py"), str(d / "a.json"), "--json",
                            str(d / "g.json"), "--markdown", str(d / "g.md")], check=True, capture_output=True)
            self.assertEqual(json.loads((d / "g.json").read_text())["policy"], {"k": 2, "rounding_draws": 8})


class SlimReport(unittest.TestCase):
    def test_cases_keep_every_field_but_their_outputs_and_the_command_is_recorded(self):
        case = {"kernel": "k", "dtype": "bf16", "pass": True, "max_rel_err": 1e-3, "reproduce": "larc gate ...",
                "outputs": [{"output": "o", "rel_rms": 1e-3}]}
        failure = dict(case, shrunk=dict(case))
        with tempfile.TemporaryDirectory() as d:
            d = pathlib.Path(d)
            for name, report in (("gate", {"tree_hash": "abc", "results": [case, case]}),
                                 ("fuzz", {"tree_hash": "abc", "failures": [failure], "summary": {"cases": 9}})):
                (d / "full.json").write_text(json.dumps(report))
                subprocess.run([sys.executable, str(HERE / "slim_report.py"), str(d / "full.json"), "--out",
                                str(d / "slim.json"), "--command", "kernels_run.sh " + name], check=True)
                slim = json.loads((d / "slim.json").read_text())
                key = "results" if name == "gate" else "failures"
                self.assertEqual(slim["tree_hash"], "abc")
                self.assertEqual(slim["summarised"]["full_report"], "kernels_run.sh " + name)
                for c in slim[key]:
                    self.assertNotIn("outputs", c)
                    self.assertEqual(c["reproduce"], "larc gate ...")
                self.assertEqual(len(slim[key]), len(report[key]))
                if name == "fuzz":
                    self.assertNotIn("outputs", slim["failures"][0]["shrunk"])
                    self.assertEqual(slim["summary"], {"cases": 9})


class FuzzSummary(unittest.TestCase):
    def test_a_failure_without_a_ratio_counts_as_infinite_and_a_skip_as_zero(self):
        case = {"kernel": "k", "dtype": "bf16", "shape": "1,1,1,1,1", "errors": ["dk: baseline is inf"],
                "reproduce": "larc gate ..."}
        report = {"tree_hash": "abc", "results": [dict(case, **{"pass": False, "worst_ratio": None}),
                                                  dict(case, **{"pass": True, "worst_ratio": None}),
                                                  dict(case, **{"pass": True, "worst_ratio": 0.5})]}
        with tempfile.TemporaryDirectory() as d:
            d = pathlib.Path(d)
            (d / "f.json").write_text(json.dumps(report))
            subprocess.run([sys.executable, str(HERE / "fuzz_summary.py"), str(d / "f.json"), "--json", str(d / "s.json"),
                            "--markdown", str(d / "s.md")], check=True, capture_output=True)
            row = json.loads((d / "s.json").read_text())["per_kernel_dtype"][0]
        self.assertEqual((row["cases"], row["failed"], row["max"]), (3, 1, float("inf")))


if __name__ == "__main__":
    unittest.main()
