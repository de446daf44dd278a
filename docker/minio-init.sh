#!/bin/sh
# One-off: create the lake bucket on MinIO (idempotent).
set -eu
mc alias set lake http://minio:9000 paimon paimon-secret
mc mb --ignore-existing lake/lake
