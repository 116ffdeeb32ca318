"""workcoord runtime kit: errors, validation, settings, logging, telemetry, gRPC plumbing, bus.

Import the module you need (``workcoord.kit.errors``, ``workcoord.kit.bus`` …). Nothing is
re-exported here on purpose: ``workcoord.kit.errors`` must stay importable without grpc.
"""
