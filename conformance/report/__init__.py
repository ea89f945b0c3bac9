"""Reports from verdicts: static HTML site, matrix.json, Markdown summary, JUnit XML, allure results.

Entry points: ``conformance report RUNS_DIR... --out DIR`` (command.py);
``command.build_report(runs, out, spark_master)`` (judge + write everything);
``site.write_site(verdicts, out_dir, timelines)`` when verdicts are at hand
(timelines from ``conformance.pipeline.timelines.timelines(judge_out_dir)``).
"""
