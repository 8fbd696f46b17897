# bash completion for dedupsim(1). Every word offered comes from the program itself:
# `dedupsim __complete WORD...` answers with its commands, options and their values as it
# defines them, and its scenario names, so a new option or lesson completes with no edit here.
# Installed as share/bash-completion/completions/dedupsim, where bash-completion finds it.

_dedupsim() {
    local cur=${COMP_WORDS[COMP_CWORD]}
    local program=${COMP_WORDS[0]}
    [[ $program == "~/"* ]] && program=$HOME/${program#"~/"}
    local IFS=$'\n'
    local -a answer
    # The words after the program's name, up to and with the one being completed.
    answer=($("$program" __complete "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)) || return
    # After "--option=" bash completes the text after the '='.
    [[ $cur == "=" ]] && cur=""
    case ${answer[0]} in
        files)
            compopt -o filenames 2>/dev/null
            COMPREPLY=($(compgen -f -- "$cur"))
            ;;
        folders)
            compopt -o filenames 2>/dev/null
            COMPREPLY=($(compgen -d -- "$cur"))
            ;;
        words)
            COMPREPLY=("${answer[@]:1}")
            ;;
    esac
}
complete -F _dedupsim dedupsim
