"""Tools: typed tool functions, built-in tools that act on their node, and tool hooks."""
