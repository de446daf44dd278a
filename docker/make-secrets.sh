#!/bin/sh
# Write docker/secrets.env (or $1) with random secrets, the keys of secrets.env.example.
# Refuses to replace an existing file: Postgres and MinIO keep the credentials they first
# started with in their volumes.
set -eu
out=${1:-"$(dirname "$0")/secrets.env"}
if [ -e "$out" ]; then
    echo "$out exists: keeping it (delete it, and the pgdata / lake volumes, to start over)" >&2
    exit 0
fi
rand() { LC_ALL=C tr -dc 'A-Za-z0-9' </dev/urandom | head -c "$1"; }
pg=$(rand 32)
umask 077
cat >"$out" <<END
# written by docker/make-secrets.sh: the deployment's secrets (keep out of git)
POSTGRES_PASSWORD=$pg
DAGSTER_PG_PASSWORD=$pg
MINIO_ROOT_USER=root-$(rand 12)
MINIO_ROOT_PASSWORD=$(rand 40)
AWS_ACCESS_KEY_ID=paimon-$(rand 12)
AWS_SECRET_ACCESS_KEY=$(rand 40)
END
echo "wrote $out"
