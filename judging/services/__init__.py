"""Writes and workflows of the judging app, one module per concept (`runs`,
`configs`, `estimates`, `prompts`, `execution`, ...). Nothing is re-exported here:
callers import the module that defines a service."""
