"""Wire shapes of the buddy platform protocol (``docs/protocol.md``), shared by the dev
platform server and the client. Pydantic models only: importing them pulls in no server
and no HTTP client."""
