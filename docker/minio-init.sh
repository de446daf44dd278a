#!/bin/sh
# One-off (idempotent): the buckets of the lake, the landing zone and the compute logs, and the
# application's own MinIO user (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, read-write), made
# with the root credentials. Every name and credential comes from paimon.env / secrets.env.
set -eu
bucket_of() { b=${1#s3://}; echo "${b%%/*}"; }
mc alias set store http://minio:9000 "$MINIO_ROOT_USER" "$MINIO_ROOT_PASSWORD"
for bucket in "$(bucket_of "$PAIMON_WAREHOUSE")" "$(bucket_of "$PAIMON_LANDING")" \
              "$DAGSTER_COMPUTE_LOGS_BUCKET"; do
    mc mb --ignore-existing "store/$bucket"
done
mc admin user add store "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY"
mc admin policy attach store readwrite --user "$AWS_ACCESS_KEY_ID" || true  # already attached
