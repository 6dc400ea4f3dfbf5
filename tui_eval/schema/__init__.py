"""Models of ADK eval files (eval sets, configs, results) and their loaders."""
