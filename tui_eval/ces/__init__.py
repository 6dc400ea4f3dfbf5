"""CES (Customer Engagement Suite) evaluations: the resource model, the mapping to ADK eval sets, the MCP client."""
