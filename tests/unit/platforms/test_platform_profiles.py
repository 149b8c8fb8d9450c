"""Platform profiles as a configuration layer: shipped < profile < user defaults < file < --set."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from platforms_support import IMAGE, RECIPE, BundleOf

from dockyard_k8s.config.layering import Layers
from dockyard_k8s.config.loader import load_run
from dockyard_k8s.config.platforms import EKS_GPU_ENV, EKS_PRESETS, PROFILES, profile_layer
from dockyard_k8s.errors import ConfigError


def test_generic_profile_is_empty_and_changes_nothing(bundle_of: BundleOf) -> None:
    assert PROFILES["generic"] == {}
    run = bundle_of().run
    assert run.infra["infra"]["platform"] == "generic"
    assert run.sources[1] != "<generic profile>"
    assert run.infra["infra"]["runtimeClassName"] is None
    assert run.infra["kuberay"]["trainer"]["env"] == {}


def test_profile_layer_sits_between_shipped_defaults_and_the_files(bundle_of: BundleOf) -> None:
    run = bundle_of({"infra": {"platform": "eks"}}).run
    assert run.sources[0] == "<shipped defaults>"
    assert run.sources[1] == "<eks profile>"
    assert run.infra["kuberay"]["trainer"]["env"]["FI_PROVIDER"] == "efa"
    assert run.infra["infra"]["gpuScheduling"]["onePodPerNode"] is True


def test_every_profile_value_can_be_overridden_by_the_infra_file_and_set(bundle_of: BundleOf) -> None:
    bundle = bundle_of({"infra": {"platform": "eks", "storage": {"mountPath": "/shared"}},
                     "kuberay": {"trainer": {"env": {"NCCL_DEBUG": "INFO"}}}},
                    "infra.gpuScheduling.onePodPerNode=false")
    infra = bundle.run.infra
    assert infra["infra"]["storage"]["mountPath"] == "/shared"  # file beats profile
    assert infra["kuberay"]["trainer"]["env"]["NCCL_DEBUG"] == "INFO"  # file beats profile, per key
    assert infra["kuberay"]["trainer"]["env"]["FI_PROVIDER"] == "efa"  # the rest of the profile's env stays
    assert infra["infra"]["gpuScheduling"]["onePodPerNode"] is False  # --set beats profile


def test_user_defaults_file_beats_the_profile_and_can_choose_it(tmp_path: Path) -> None:
    user = tmp_path / "defaults.yaml"
    user.write_text("infra:\n  platform: kind\n  storage:\n    size: 20Gi\n", encoding="utf-8")
    infra = tmp_path / "infra.yaml"
    infra.write_text(f"infra:\n  image: {IMAGE}\n", encoding="utf-8")
    run = load_run(RECIPE, str(infra), Layers(env={"DOCKYARD_K8S_DEFAULTS": str(user)}))
    assert run.sources[:3] == ["<shipped defaults>", "<kind profile>", str(user)]
    assert run.infra["infra"]["runtimeClassName"] == "nvidia"  # from the kind profile chosen by the user file
    assert run.infra["infra"]["storage"]["size"] == "20Gi"  # user defaults beat the profile


def test_platform_chosen_with_set_applies_its_profile(bundle_of: BundleOf) -> None:
    infra = bundle_of({}, "infra.platform=k3s").run.infra
    assert infra["infra"]["storage"]["storageClassName"] == "local-path"
    assert infra["kuberay"]["trainer"]["gpus"] == 1


def test_kind_uses_its_default_storage_class(bundle_of: BundleOf) -> None:
    assert bundle_of({"infra": {"platform": "kind"}}).run.infra["infra"]["storage"]["storageClassName"] == "standard"


@pytest.mark.parametrize("instance_type", sorted(EKS_PRESETS))
def test_instance_type_preset_sizes_both_gpu_fleets(bundle_of: BundleOf, instance_type: str) -> None:
    infra = bundle_of({"infra": {"platform": "eks", "instanceType": instance_type}}).run.infra
    preset = EKS_PRESETS[instance_type]
    for role in ("trainer", "inference"):
        fleet = infra["kuberay"][role]
        assert fleet["gpus"] == preset.gpus
        assert fleet["cpu"] == preset.cpu and fleet["memory"] == preset.memory
        assert fleet["extendedResources"] == {"vpc.amazonaws.com/efa": preset.efa}
        assert fleet["nodeSelector"] == {"node.kubernetes.io/instance-type": instance_type}
        assert fleet["memoryLimit"] == preset.memory_limit


def test_eks_text_sizing_table_is_carried_verbatim() -> None:
    # ../shared/spec/003: "Resource Sizing Guide"
    for name, sizing in (("p4de.24xlarge", (8, 4, "90", "1000Gi")), ("p5.48xlarge", (8, 32, "180", "1800Gi"))):
        p = EKS_PRESETS[name]
        assert (p.gpus, p.efa, p.cpu, p.memory) == sizing


def test_file_sizing_beats_the_preset(bundle_of: BundleOf) -> None:
    infra = bundle_of({"infra": {"platform": "eks", "instanceType": "p5.48xlarge"},
                    "kuberay": {"trainer": {"cpu": "150"}}}).run.infra
    assert infra["kuberay"]["trainer"]["cpu"] == "150"
    assert infra["kuberay"]["inference"]["cpu"] == "180"


def test_profile_marks_point_at_the_profile(bundle_of: BundleOf) -> None:
    with pytest.raises(ConfigError) as e:
        bundle_of({"infra": {"platform": "eks"}, "kuberay": {"trainer": {"shmSize": "8Gi"}}})
    lines = e.value.render().splitlines()
    assert any("kuberay.trainer.shmSize" in line and "64Gi" in line and "infra.yaml" in line for line in lines)


def test_instance_type_needs_eks(bundle_of: BundleOf) -> None:
    with pytest.raises(ConfigError) as e:
        bundle_of({"infra": {"platform": "generic", "instanceType": "p5.48xlarge"}})
    assert "infra.instanceType: sizing presets are EKS instance types" in e.value.render()


def test_unknown_platform_and_instance_type_are_schema_errors(bundle_of: BundleOf) -> None:
    with pytest.raises(ConfigError) as e:
        bundle_of({"infra": {"platform": "gke", "instanceType": "p9.huge"}})
    text = e.value.render()
    assert "infra.platform: got 'gke'" in text  # the choices it lists: tests/golden/messages/config.txt
    assert "infra.instanceType: got 'p9.huge'" in text


def test_profile_layer_ignores_garbage() -> None:
    assert profile_layer(None, None) == {}
    assert profile_layer(["eks"], "p5.48xlarge") == {}
    assert profile_layer("eks", 5)["kuberay"]["trainer"]["env"] == EKS_GPU_ENV


def test_profiles_only_name_keys_of_the_schema() -> None:
    from dockyard_k8s.config.infra_schema import INFRA
    from dockyard_k8s.config.layering import merge
    from dockyard_k8s.config.schema import check, defaults_of

    for name in PROFILES:
        for typ in [None, *EKS_PRESETS] if name == "eks" else [None]:
            data = merge(defaults_of(INFRA), profile_layer(name, typ))
            data["infra"]["platform"] = name
            assert check(INFRA, data) == [], (name, typ)


def test_user_file_in_yaml_is_not_changed_by_set(tmp_path: Path) -> None:
    """--set applies to a copy: the loaded layers are reused for the second stacking pass."""
    infra = tmp_path / "infra.yaml"
    infra.write_text(yaml.safe_dump({"infra": {"image": IMAGE, "platform": "eks",
                                               "labels": {"team": "rl"}}}), encoding="utf-8")
    run = load_run(RECIPE, str(infra), Layers(sets=["infra.labels.team=infra"], env={"HOME": str(tmp_path)}))
    assert run.infra["infra"]["labels"] == {"team": "infra"}
