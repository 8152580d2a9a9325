"""Build a real LangChain run tree (no model service: langchain_core's fake chat model) and dump it
as JSON, with its children (langchain_run_dict) and as run.model_dump(mode="json") alone, which
leaves them out. Run with langchain-core installed and this repository on PYTHONPATH:
python langchain_make_run.py langchain_run.json langchain_model_dump.json"""
import json
import sys

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langchain_core.tracers.context import collect_runs

from pytest_agentbench.trajectory.adapters import langchain_run_dict


@tool
def get_weather(city: str, units: str = "C") -> str:
    """Weather for a city."""
    return f"20{units} in {city}"


@tool
def explode(x: int) -> str:
    """Always fails."""
    raise ValueError("kaboom")


llm = FakeListChatModel(responses=["I will look up the weather."])


def agent(inputs: dict) -> dict:
    llm.invoke(inputs["input"])
    out = get_weather.invoke({"city": inputs["input"], "units": "F"})
    try:
        explode.invoke({"x": 1})
    except ValueError:
        pass
    return {"output": f"done: {out}"}


if __name__ == "__main__":
    with collect_runs() as cb:
        RunnableLambda(agent).with_config(run_name="agent").invoke({"input": "Tokyo"})
    run = cb.traced_runs[0]
    with open(sys.argv[1], "w") as f:
        json.dump(langchain_run_dict(run), f, indent=1)
    with open(sys.argv[2], "w") as f:
        json.dump(run.model_dump(mode="json"), f, indent=1)
