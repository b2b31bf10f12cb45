#!/usr/bin/env python3
"""A gRPC client of the ongrid manager in Python, from code generated out of proto/.

Generate the code first (Debian: protobuf-compiler, protobuf-compiler-grpc, python3-grpcio,
python3-protobuf), then run this script with the generated directory on PYTHONPATH:

    protoc -I proto --python_out=gen --grpc_out=gen \
        --plugin=protoc-gen-grpc=/usr/bin/grpc_python_plugin proto/ongrid/v1/*.proto
    ONGRID_TOKEN=ogu_... PYTHONPATH=gen /usr/bin/python3 docs/examples/python/ongrid_client.py \
        --manager 127.0.0.1:7070 --text "ERROR disk full on /var"

It lists the skills the caller may see (SkillService/ListSkills), then runs analyze_output, a
skill of the manager itself (SkillService/ExecuteSkill), with the API token sent as
`authorization: Bearer <token>` metadata on each call. With --ca the channel is TLS (a manager
with server.tls_cert), verified against that CA file.
"""
import argparse
import json
import os
import sys

import grpc
from google.protobuf import json_format, struct_pb2

from ongrid.v1 import skill_service_pb2, skill_service_pb2_grpc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manager", default="127.0.0.1:7070", help="host:port of the manager (no scheme)")
    parser.add_argument("--ca", help="PEM CA file: connect over TLS and verify the manager against it")
    parser.add_argument("--text", default="ERROR disk full on /var", help="text for analyze_output")
    args = parser.parse_args()

    token = os.environ.get("ONGRID_TOKEN", "")
    if not token:
        print("ONGRID_TOKEN is not set: export an API token (ongrid tokens create --user NAME)", file=sys.stderr)
        return 2
    metadata = [("authorization", f"Bearer {token}")]

    if args.ca:
        with open(args.ca, "rb") as f:
            channel = grpc.secure_channel(args.manager, grpc.ssl_channel_credentials(root_certificates=f.read()))
    else:
        channel = grpc.insecure_channel(args.manager)  # the manager serves gRPC over h2c on its one port

    with channel:
        skills = skill_service_pb2_grpc.SkillServiceStub(channel)
        try:
            listed = skills.ListSkills(skill_service_pb2.ListSkillsRequest(), metadata=metadata, timeout=30)
            print(f"skills: {len(listed.skills)}")
            for s in listed.skills:
                print(f"  {s.key}")

            params = struct_pb2.Struct()
            params.update({"text": args.text})
            res = skills.ExecuteSkill(skill_service_pb2.ExecuteSkillRequest(key="analyze_output", params=params), metadata=metadata, timeout=60)
        except grpc.RpcError as err:  # a refusal: its code and the manager's message (with its hint)
            print(f"error: {err.code().name}: {err.details()}", file=sys.stderr)
            return 1

        result = res.result
        print(f"analyze_output: {'success' if result.success else 'failure'} (audit row {res.audit_seq})")
        if not result.success:
            print(f"  {result.error.code}: {result.error.message} ({result.error.hint})")
            return 1
        print(json.dumps(json_format.MessageToDict(result.output), indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
