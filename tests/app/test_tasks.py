"""The tasks of ``jaxparadigm run`` are one table, and ``Config.task`` admits exactly its keys."""

import typing

import pytest

from jaxparadigm.app.tasks import TASKS
from jaxparadigm.config import Config, config_from_dict
from jaxparadigm.errors import ConfigError


def test_config_task_literal_is_the_task_table():
    hint = typing.get_type_hints(Config, include_extras=True)["task"]
    assert typing.get_origin(hint) is typing.Literal
    assert list(typing.get_args(hint)) == list(TASKS)


def test_every_task_loads_and_an_unknown_one_is_refused():
    for task in TASKS:
        assert config_from_dict({"name": "x", "task": task}).task == task
    with pytest.raises(ConfigError, match="config key 'task': got 'nope'"):
        config_from_dict({"name": "x", "task": "nope"})
