"""Drop-ins for agent frameworks (issue 18), each imported only when used:

* :mod:`hermes_host.integrations.openai_agents` — ``HermesSession``, a ``Session`` for the
  OpenAI Agents SDK (``pip install 'hermes-host[openai-agents]'``);
* :mod:`hermes_host.integrations.langchain` — ``HermesContextMiddleware`` for
  ``langchain.agents.create_agent`` (``pip install 'hermes-host[langchain]'``);
* :mod:`hermes_host.integrations.langgraph` — ``hermes_pre_model_hook`` for LangGraph's
  ``create_react_agent`` (the same extra).

This package imports no framework: ``import hermes_host`` never needs one installed.
"""
