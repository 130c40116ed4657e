# Sourced by the scripts that apt-get install packages which ship a service
# (prometheus, etcd-server, slurmctld, ...): the package's maintainer scripts
# must not start it (it would listen on every address, unconfigured, or
# under an init this machine may not run).
#
#   apt_install_without_services TAG ARGS...
#
# runs `apt-get install ARGS...` (through $sudo when the caller sets it)
# while /usr/sbin/policy-rc.d says no service may start. A policy-rc.d that
# was there before is left as it is; one made here carries "kvperf TAG" and
# is the only one removed again, also when the script is interrupted.

kvperf_policy_rc_d=/usr/sbin/policy-rc.d

apt_install_without_services() {
  local tag=$1 status=0
  shift
  if [ ! -e "$kvperf_policy_rc_d" ]; then
    printf '#!/bin/sh\n# kvperf %s: temporary, during apt-get install\nexit 101\n' "$tag" \
      | ${sudo:-} tee "$kvperf_policy_rc_d" >/dev/null
    ${sudo:-} chmod 755 "$kvperf_policy_rc_d"
  fi
  trap "remove_own_policy_rc_d '$tag'" EXIT
  ${sudo:-} apt-get install "$@" || status=$?
  remove_own_policy_rc_d "$tag"
  trap - EXIT
  return "$status"
}

# Removes the policy-rc.d only when it is the one made for TAG.
remove_own_policy_rc_d() {
  if [ -f "$kvperf_policy_rc_d" ] && grep -q "^# kvperf $1: temporary" "$kvperf_policy_rc_d"; then
    ${sudo:-} rm -f "$kvperf_policy_rc_d"
  fi
}
