"""The service edge: gRPC server and servicer, protobuf conversion, HTTP endpoints,
metrics, logging and this process's memory."""
