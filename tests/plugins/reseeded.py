"""A control of a user's own, as a plug-in file outside `ips` (docs/api.md#writing-a-control):
each listed model again with its weights re-drawn from one seed given in the config, the
same for every model (where the untrained twins draw a seed per model).

Named in a config's `plugins:`, its keys are keys of `controls` like the built-in ones:
`controls: {reseeded: [M], reseed: 7}` adds the entry `M-reseeded`.
"""

from ips.controls import Control
from ips.errors import ConfigError


class Reseeded(Control):
    kind = "reseeded"
    noun = "the model re-drawn from the shared seed"
    settings = {
        "reseeded": {"description": "Configured models that each get an entry "
                                    "`<name>-reseeded`, their weights re-drawn from reseed.",
                     "type": "array", "items": {"type": "string"}, "default": []},
        "reseed": {"description": "Seed of the re-drawn weights.",
                   "type": "integer", "minimum": 0, "default": 7},
    }

    @classmethod
    def expand(cls, controls, models, source):
        added = []
        for i, name in enumerate(controls["reseeded"]):
            if name not in models or models[name].get("control"):
                raise ConfigError(f"{source}: controls.reseeded.{i}: {name!r} is no "
                                  "configured model")
            added.append(f"{name}-reseeded")
            models[added[-1]] = cls.mark({**models[name], "source": {
                "redraw": name, "seed": controls["reseed"]}}, name)
        return added
