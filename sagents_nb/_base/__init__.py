"""Foundation: errors, messages, ids and the library's loop thread; imports nothing of the package."""
