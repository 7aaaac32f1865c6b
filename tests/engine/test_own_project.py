"""A user's own project, under any name: every fix the program prints works as written there."""

from __future__ import annotations

import re

import pytest
import yaml
from pulumi import automation as auto

from tests.conftest import cpu_cluster_fleet
from tests.engine.harness import Engine

KUBECONFIG = "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n"


def test_the_printed_kubeconfig_fix_works_in_a_project_with_another_name(engine: Engine) -> None:
    engine.rename_project("my-fleet")
    engine.write_fleet("dev", cpu_cluster_fleet("Existing", "lab"))
    stack = engine.stack("dev")
    with pytest.raises(auto.CommandError) as err:
        stack.preview()
    fix = re.search(r"run: (pulumi config set [^\n\\]+ < path/to/kubeconfig)", str(err.value))
    assert fix is not None, str(err.value)
    (engine.project / "kubeconfig.yaml").write_text(KUBECONFIG)
    done = engine.shell(fix.group(1).replace("path/to/kubeconfig", "kubeconfig.yaml"))
    assert done.returncode == 0, done.stderr

    config = yaml.safe_load(engine.stack_file("dev").read_text())["config"]
    assert "secure" in config["modelplane:kubeconfig"], "the fix did not store the key the program reads"
    assert stack.preview().change_summary.get("create", 0) > 5
