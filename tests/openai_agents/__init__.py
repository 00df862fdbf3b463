"""The OpenAI Agents SDK session."""
