# bash completion for fingerauth(1)

_fingerauth_users() {
    compgen -u -- "$1"
}

_fingerauth() {
    local cur prev words cword
    if declare -F _init_completion >/dev/null 2>&1; then
        _init_completion || return
    else
        COMPREPLY=()
        cur="${COMP_WORDS[COMP_CWORD]}"
        prev="${COMP_WORDS[COMP_CWORD-1]}"
        words=("${COMP_WORDS[@]}")
        cword=$COMP_CWORD
    fi

    local commands="enroll list remove key register revoke reset test status pam-line trial sync host approve active-keys help"
    local fingers="left-thumb left-index-finger left-middle-finger left-ring-finger left-little-finger
        right-thumb right-index-finger right-middle-finger right-ring-finger right-little-finger"
    local common="--user --config --state-dir --help"

    case "$prev" in
        --user) COMPREPLY=($(_fingerauth_users "$cur")); return ;;
        --finger) COMPREPLY=($(compgen -W "$fingers" -- "$cur")); return ;;
        --config) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --state-dir|--pam-dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
        --bits) COMPREPLY=($(compgen -W "3072 2048" -- "$cur")); return ;;
        --store) COMPREPLY=($(compgen -W "tpm file auto" -- "$cur")); return ;;
        --kid|--service|--times|--wait) return ;;
    esac

    if [[ $cword -eq 1 ]]; then
        COMPREPLY=($(compgen -W "$commands --help" -- "$cur"))
        return
    fi

    local command="${words[1]}" options=""
    case "$command" in
        enroll) options="$common --finger --store --force --no-register" ;;
        list) options="$common --json" ;;
        remove) options="$common --finger --all" ;;
        key)
            if [[ $cword -eq 2 ]]; then
                COMPREPLY=($(compgen -W "create show rotate ek" -- "$cur"))
                return
            fi
            case "${words[2]}" in
                create) options="$common --store --bits --force" ;;
                show) options="$common --json" ;;
                rotate) options="$common --store --bits" ;;
                ek) options="--config --json" ;;
            esac
            ;;
        register|reset) options="$common" ;;
        revoke) options="$common --kid" ;;
        test) options="$common --service" ;;
        status|doctor) options="$common --json --pam-dir" ;;
        sync) options="$common --json" ;;
        approve) options="$common --wait --deny --yes" ;;
        active-keys) options="--config --state-dir --wait --help" ;;
        pam-line)
            if [[ "$cur" != -* ]]; then
                COMPREPLY=($(compgen -W "sudo sshd login common-auth gdm-password lightdm su polkit-1" -- "$cur"))
                return
            fi
            options="--config --state-dir --json --help"
            ;;
        trial)
            if [[ $cword -eq 2 ]]; then
                COMPREPLY=($(compgen -W "start touch stop" -- "$cur"))
                return
            fi
            case "${words[2]}" in
                start) options="--config --state-dir --user --help" ;;
                touch) options="--config --state-dir --times --wrong --wait --help" ;;
                stop) options="--config --state-dir --help" ;;
            esac
            ;;
        host)
            if [[ $cword -eq 2 ]]; then
                COMPREPLY=($(compgen -W "register status" -- "$cur"))
                return
            fi
            case "${words[2]}" in
                register) options="--config --state-dir --help" ;;
                status) options="--config --state-dir --json --help" ;;
            esac
            ;;
        help) COMPREPLY=($(compgen -W "$commands" -- "$cur")); return ;;
    esac
    # Each option is given once (fingerauth refuses a repeated one): offer only those not
    # on the line yet.
    local given i offered=""
    for given in $options; do
        for ((i = 2; i < cword; i++)); do
            [[ "${words[i]%%=*}" == "$given" ]] && continue 2
        done
        offered+=" $given"
    done
    COMPREPLY=($(compgen -W "$offered" -- "$cur"))
}

complete -F _fingerauth fingerauth
