"""replay: a workbench for the context policies of LLM agents."""

__version__ = "0.1.0"
