#!/bin/sh
# Writes a node's kubeconfig (docker-compose.yml): the apiserver's CA and this node's own token,
# which the apiserver put into the volume only this node mounts at /node. Owner-only, like any
# kubeconfig with a credential in it.
set -eu
mkdir -p /etc/kh
umask 077
cat > /etc/kh/kubeconfig <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: kh
  cluster:
    server: https://apiserver:6443
    certificate-authority: /ca/ca.crt
users:
- name: node
  user:
    token: $(cat /node/token)
contexts:
- name: kh
  context:
    cluster: kh
    user: node
current-context: kh
KUBECONFIG
