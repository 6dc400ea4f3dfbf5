"""CES (Customer Engagement Suite) apps over the network: the MCP client, pull, run and push, the cache of
pulled apps, a CES result as text. The models and the mapping are data (`tui_eval.schema.ces`); the
`tui-eval ces` commands are a face (`tui_eval.ces_cli`); the dashboard's CES jobs live in `tui_eval.tui`."""
