"""Run in Hermes' venv: two turns of a real AIAgent against the stub model at argv[1]; prints JSON."""

import json
import sys

from run_agent import AIAgent

agent = AIAgent(base_url=sys.argv[1], api_key="stub-key", model="stub-model", quiet_mode=True,
                enabled_toolsets=["memory"], skip_context_files=True, platform="cli", max_iterations=6,
                tool_delay=0)
first = agent.run_conversation("Remember: the staging server uses port 8443.")
second = agent.run_conversation("Which port does staging use?", conversation_history=first["messages"])
agent.shutdown_memory_provider(second["messages"])
print(json.dumps({"provider": [p.name for p in agent._memory_manager.providers] if agent._memory_manager else [],
                  "tools": sorted(t["function"]["name"] for t in agent.tools),
                  "answers": [first["final_response"], second["final_response"]]}))
