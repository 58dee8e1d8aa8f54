"""Verify command: fails unless tinypkg imports with the server's env."""
import tinypkg

print("verify ok: tinypkg", tinypkg.ANSWER)
