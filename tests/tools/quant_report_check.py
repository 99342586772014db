#!/usr/bin/env python3
"""qinfer-quant-report end to end on a bundled model: the table has a row per type plus the
base, the JSON's numbers are sane (sizes and bits per weight grow Q2_K < Q4_0 < Q8_0, KL
divergence falls Q2_K > Q8_0, every speed is positive), and the plot is a PNG.

Usage: quant_report_check.py BIN_DIR DATA_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

from checks import check, summary


def main():
    bin_dir, data = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        r = subprocess.run([os.path.join(bin_dir, "qinfer-quant-report"), "-m",
                            os.path.join(data, "models/wp-llama-Q4_K_S.gguf"), "--allow-requantize",
                            "--types", "Q2_K,Q4_0,Q8_0", "-f",
                            os.path.join(data, "models/reference/heldout.txt"), "-c", "128",
                            "--chunks", "4", "-p", "32", "-n", "8", "-r", "1", "-o", tmp],
                           capture_output=True, text=True)
        check("qinfer-quant-report runs", r.returncode == 0, r.stderr[-500:])
        if r.returncode != 0:
            return summary()
        md = open(os.path.join(tmp, "report.md")).read().splitlines()
        rows = [l for l in md if l.startswith("| ") and not l.startswith("| type")
                and not l.startswith("| ---")]
        check("report.md: the base and one row per type", len(rows) == 4, "\n".join(md))
        j = {row["type"]: row for row in json.load(open(os.path.join(tmp, "report.json")))}
        check("bits per weight: Q2_K < Q4_0 < Q8_0",
              j["Q2_K"]["bpw"] < j["Q4_0"]["bpw"] < j["Q8_0"]["bpw"], str(j)[:300])
        check("KL divergence: Q2_K > Q4_0 > Q8_0 > 0 = the base",
              j["Q2_K"]["mean_kld"] > j["Q4_0"]["mean_kld"] > j["Q8_0"]["mean_kld"] > 0
              and j["wp-llama-Q4_K_S"]["mean_kld"] == 0, str(j)[:300])
        check("every speed is positive",
              all(x["pp_ts"] > 0 and x["tg_ts"] > 0 for x in j.values()))
        png = open(os.path.join(tmp, "report.png"), "rb").read(8)
        check("report.png is a PNG", png == b"\x89PNG\r\n\x1a\n", repr(png))
    return summary()


if __name__ == "__main__":
    sys.exit(main())
