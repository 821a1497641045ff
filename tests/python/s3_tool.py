#!/usr/bin/python3
"""boto3, the independent S3 client of the S3 tests (python3-boto3 from Debian). Endpoint and credentials come from
the AWS_* environment (scripts/ceph-rgw.sh writes them).

Usage: /usr/bin/python3 s3_tool.py COMMAND ARGS
  mkbucket BUCKET                 create the bucket (no error if it exists)
  upload BUCKET PREFIX DIR        upload every file under DIR as PREFIX/<path relative to DIR>
  download BUCKET PREFIX DIR      download every object under PREFIX/ into DIR/<key relative to PREFIX>
  list BUCKET PREFIX              print one JSON object {key: size} of the objects under PREFIX
  uploads BUCKET                  print the number of multipart uploads in progress in the bucket
  delete BUCKET KEY               delete one object
Exits 1 with one line on an error.
"""
import json
import os
import pathlib
import sys

import boto3
import botocore.config


def client():
    return boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"],
                        config=botocore.config.Config(s3={"addressing_style": "path"}))


def keys(s3, bucket, prefix):
    out = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for o in page.get("Contents", []):
            out[o["Key"]] = o["Size"]
    return out


def main(argv):
    s3 = client()
    cmd, args = argv[1], argv[2:]
    if cmd == "mkbucket":
        try:
            s3.create_bucket(Bucket=args[0])
        except s3.exceptions.BucketAlreadyOwnedByYou:
            pass
    elif cmd == "upload":
        bucket, prefix, root = args[0], args[1].strip("/"), pathlib.Path(args[2])
        for f in sorted(root.rglob("*")):
            if f.is_file():
                s3.upload_file(str(f), bucket, f"{prefix}/{f.relative_to(root).as_posix()}")
    elif cmd == "download":
        bucket, prefix, root = args[0], args[1].strip("/") + "/", pathlib.Path(args[2])
        for key in keys(s3, bucket, prefix):
            dst = root / key[len(prefix):]
            dst.parent.mkdir(parents=True, exist_ok=True)
            s3.download_file(bucket, key, str(dst))
    elif cmd == "list":
        print(json.dumps(keys(s3, args[0], args[1])))
    elif cmd == "uploads":
        print(len(s3.list_multipart_uploads(Bucket=args[0]).get("Uploads", [])))
    elif cmd == "delete":
        s3.delete_object(Bucket=args[0], Key=args[1])
    else:
        print(f"s3_tool: unknown command {cmd}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except Exception as e:  # one line, for the test's failure message
        print(f"s3_tool: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
