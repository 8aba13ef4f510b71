"""The model of a SWE-agent 0.x trajectory, from the name of the run folder it was written in.

0.x ``.traj`` files name no model (``save_trajectory`` writes environment, trajectory, history, info); ``run.py``
(0.1.0 to 0.7.0, ``ScriptArguments.run_name``) writes them to ``trajectories/<user>/<run name>/``, the run name
being ``{model_name}__{data_stem}__{config_stem}__t-{temperature:.2f}__p-{top_p:.2f}__c-{cost limit:.2f}
__install-{0|1}[__{suffix}]`` with ``:`` in the model name written ``-``. The name given may be one of the
model classes' ``SHORTCUTS`` (``sweagent/agent/models.py``, 0.7.0), which name the model actually called.
"""

from __future__ import annotations

import re
from pathlib import Path

RUN_NAME_RE = re.compile(r"^(?P<model>.+?)__.+__t-\d+\.\d\d__p-\d+\.\d\d__c-\d+\.\d\d__install-[01](?:__.*)?$")
SHORTCUTS = {  # sweagent/agent/models.py 0.7.0: OpenAIModel, AnthropicModel, GroqModel, TogetherModel
    "gpt3": "gpt-3.5-turbo-1106",
    "gpt3-legacy": "gpt-3.5-turbo-16k-0613",
    "gpt4": "gpt-4-1106-preview",
    "gpt4-legacy": "gpt-4-0613",
    "gpt4-0125": "gpt-4-0125-preview",
    "gpt3-0125": "gpt-3.5-turbo-0125",
    "gpt4-turbo": "gpt-4-turbo-2024-04-09",
    "gpt4o": "gpt-4o-2024-05-13",
    "gpt-4o-mini": "gpt-4o-mini-2024-07-18",
    "claude-2": "claude-2.1",
    "claude-opus": "claude-3-opus-20240229",
    "claude-sonnet": "claude-3-sonnet-20240229",
    "claude-haiku": "claude-3-haiku-20240307",
    "claude-sonnet-3.5": "claude-3-5-sonnet-20240620",
    "groq/llama8": "llama3-8b-8192",
    "groq/llama70": "llama3-70b-8192",
    "groq/gemma7it": "gemma-7b-it",
    "groq/mixtral8x7": "mixtral-8x7b-32768",
    "llama13b": "meta-llama/Llama-2-13b-chat-hf",
    "llama70b": "meta-llama/Llama-2-70b-chat-hf",
    "mistral7b": "mistralai/Mistral-7B-Instruct-v0.2",
    "mixtral8x7b": "mistralai/Mixtral-8x7B-Instruct-v0.1",
}
AZURE = "azure-"  # "azure:gpt4" as the folder writes it


def run_name_model(traj: Path) -> str | None:
    """The model the trajectory's run folder names (a shortcut resolved), or None when the folder is not named as
    0.x's ``run.py`` names it."""
    match = RUN_NAME_RE.match(traj.parent.name)
    if match is None:
        return None
    name = match.group("model")
    if name.startswith(AZURE) and name[len(AZURE) :] in SHORTCUTS:
        return SHORTCUTS[name[len(AZURE) :]]
    return SHORTCUTS.get(name, name)
