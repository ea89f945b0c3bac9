"""``conformance report --spark-master URL`` judges on a real Spark cluster, with the verdicts of local[*].

The cluster is Spark's own standalone master and one worker, started from the
pyspark wheel's jars and bound to loopback (SPARK_LOCAL_IP). The driver runs in
a separate ``conformance report`` process, as a user runs it; the worker's
work directory shows that its executors did the work. The run directories
and the output live on this machine's filesystem, which the cluster shares
(a real cluster needs them on a filesystem mounted at the same path
everywhere; README.md says so).

The report on the cluster is in the nightly tier (a whole ``conformance report`` and a local judge
of the same cells, over two minutes on 2 cores); CI keeps the cluster's start and the driver test.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.cluster.ports import free_port
from conformance.cluster.supervisor import Supervisor
from conformance.config import HOST
from stories import write_cell

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

REGISTERED = "Successfully registered with master"


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    """(master URL, the worker's work directory) of a running master and worker."""
    import pyspark

    java = shutil.which("java")
    if java is None:
        pytest.fail("java is not on PATH: the suite needs Java 17 (README.md)")
    home = Path(pyspark.__file__).parent
    tmp = tmp_path_factory.mktemp("spark-standalone")
    # The worker builds each executor's command itself; Spark's shell scripts would export the
    # Scala version its launcher needs, read here off the wheel's spark-core jar.
    [core] = (home / "jars").glob("spark-core_*.jar")
    scala = core.name.split("_", 1)[1].split("-", 1)[0]
    env = {"SPARK_HOME": str(home), "SPARK_SCALA_VERSION": scala, "SPARK_LOCAL_IP": HOST,
           "SPARK_LOCAL_DIRS": str(tmp / "local")}
    port = free_port()
    master = f"spark://{HOST}:{port}"
    jvm = [java, "-Xmx256m", "-cp", str(home / "jars" / "*")]
    with Supervisor(tmp / "logs") as sup:
        sup.spawn("master", [*jvm, "org.apache.spark.deploy.master.Master", "--host", HOST, "--port", str(port),
                             "--webui-port", str(free_port())], env=env)
        worker = sup.spawn("worker", [*jvm, "org.apache.spark.deploy.worker.Worker", "--host", HOST, "--cores", "2",
                                      "--memory", "2g", "--work-dir", str(tmp / "work"), "--webui-port",
                                      str(free_port()), master], env=env)
        deadline = time.monotonic() + 90
        while REGISTERED not in worker.log_path.read_text(errors="replace"):
            if time.monotonic() > deadline or not worker.alive():
                logs = "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
                                 for p in sorted((tmp / "logs").glob("*.log")))
                pytest.fail(f"the standalone worker did not register with {master} within 90 s:\n{logs}")
            time.sleep(0.5)
        yield master, tmp / "work"


@pytest.mark.nightly
def test_report_on_a_standalone_cluster_gives_the_local_verdicts(standalone, tmp_path):
    from conformance.pipeline import judge

    master, work = standalone
    runs = tmp_path / "runs"
    dirs = [write_cell(runs, "clean", scenario="rolling-restart"),
            write_cell(runs, "break-r2", "r2", scenario="rolling-restart")]
    out = tmp_path / "report"
    cli = Path(sys.executable).parent / "conformance"
    done = subprocess.run([str(cli), "report", str(runs), "--out", str(out), "--spark-master", master],
                          env={**os.environ, "SPARK_LOCAL_IP": HOST}, capture_output=True, text=True, timeout=540)
    assert done.returncode == 0, done.stderr[-4000:]
    on_cluster = json.loads((out / "pipeline" / "verdicts.json").read_text())
    by_run = {v["run"]: v for v in on_cluster}
    assert by_run["clean"]["verdict"] == "pass"
    assert by_run["break-r2"]["invariants"]["R2"]["status"] == "fail"
    assert (out / "index.html").is_file() and (out / "matrix.json").is_file()
    # The worker launched executors for the report's application: the cluster did the work.
    assert list(work.glob("app-*/*/stderr")), f"no executor ran on the worker ({sorted(work.glob('*'))})"
    # The same cells judged on local[*] (this process's session) give the same verdicts.
    local = json.loads(json.dumps(judge([d.resolve() for d in dirs], tmp_path / "local"), sort_keys=True,
                                   default=str))
    assert json.loads(json.dumps(on_cluster, sort_keys=True, default=str)) == local


def test_the_driver_on_a_named_cluster_gets_no_jvm_option(standalone):
    # A driver started for --spark-master spark://... (in a process of its own, as conformance
    # report starts it): neither its JVM's command line nor the application's driver options
    # (Spark's own defaults only) carry the suite's.
    master, _work = standalone
    child = ("import sys; from pathlib import Path; from conformance.pipeline.session import get_session\n"
             "s = get_session(sys.argv[1]); sc = s.sparkContext\n"
             "print(repr(Path(f'/proc/{sc._gateway.proc.pid}/cmdline').read_bytes()))\n"
             "print('OPTION=' + str(sc.getConf().get('spark.driver.extraJavaOptions', None)))\n"
             "print('MASTER=' + sc.master)\n")
    done = subprocess.run([sys.executable, "-c", child, master], env={**os.environ, "SPARK_LOCAL_IP": HOST},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    cmdline, option, on = done.stdout.strip().splitlines()[-3:]
    assert on == f"MASTER={master}"
    assert "TieredStopAtLevel" not in cmdline, cmdline
    assert option.startswith("OPTION=") and "TieredStopAtLevel" not in option, option
