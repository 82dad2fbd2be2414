# Sourced by the package tests: `path_without_rust` prints $PATH less every
# directory that holds cargo or rustc, so what runs under it shows that an
# installed package needs no Rust toolchain.
path_without_rust() {
  local d out=""
  local -a dirs
  IFS=: read -ra dirs <<<"$PATH"
  for d in "${dirs[@]}"; do
    [ -e "$d/cargo" ] || [ -e "$d/rustc" ] || out="${out:+$out:}$d"
  done
  printf '%s\n' "$out"
}
