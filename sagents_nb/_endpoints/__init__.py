"""Endpoints: the OpenAI-compatible wire on httpx, inline mocks and cassettes."""
