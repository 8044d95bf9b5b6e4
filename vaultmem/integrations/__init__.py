"""integrations/: vaultmem inside other frameworks: a LangGraph store (langgraph) and a LangChain retriever
(langchain), both from the `langgraph` extra.

Like the surfaces, they use the public API only (the `vaultmem` package's names, the Vault facade, errors,
config, settings: a contract in pyproject.toml), and nothing in the core imports them or their frameworks.
They sit below the surfaces, so a server (`vaultmem serve`) may answer a framework's routes through them.
Importing one without its extra raises MissingExtra, naming the extra to install.
"""
