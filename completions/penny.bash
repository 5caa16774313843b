# bash completion for penny(1).  The option tables inside the binary are the
# source of truth: this script asks "penny __complete [CMD]" for them.
_penny()
{
	local cur prev cmd i opts optional opt val pfx sep w flat long short arg range choices
	COMPREPLY=()
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	cmd= i=1
	# the first word: a command, help (--help, -h: one command may follow
	# it) or --version (nothing may)
	case ${COMP_WORDS[1]} in
	--version | version) ((COMP_CWORD == 1)) || return ;;
	-h | --help) ((COMP_CWORD == 1)) || cmd=help ;;
	esac
	for ((; i < COMP_CWORD && ${#cmd} == 0; i++)); do
		case ${COMP_WORDS[i]} in
		-*) ;;
		*) cmd=${COMP_WORDS[i]}; break ;;
		esac
	done
	if [[ -z $cmd ]]; then
		COMPREPLY=($(compgen -W "$(penny __complete 2>/dev/null) --version --help" -- "$cur"))
		return
	fi
	if [[ $cmd == help ]]; then
		((COMP_CWORD == i + 1)) &&
			COMPREPLY=($(compgen -W "$(penny __complete 2>/dev/null)" -- "$cur"))
		return
	fi
	# options whose value is optional (--debug, bw's --expect) take it in the
	# same word only, --opt=VALUE or -vVALUE: --help shows them as --opt[=X]
	optional=" $(penny "$cmd" --help 2>/dev/null | grep -o -- '--[A-Za-z0-9_-]*\[=' |
		tr -d '[=' | tr '\n' ' ') "
	# the option whose value is being completed: --opt=VALUE (bash splits
	# the word at "=": the words are --opt, = and VALUE), or --opt VALUE
	opt= val=$cur pfx= sep=
	if [[ $cur == =* && $prev == --* ]]; then
		opt=$prev val=${cur#=}
	elif [[ $prev == = && ${COMP_WORDS[COMP_CWORD-2]} == --* ]]; then
		opt=${COMP_WORDS[COMP_CWORD-2]}
	elif [[ $cur == --*=* ]]; then
		opt=${cur%%=*} val=${cur#*=} pfx=$opt=
	else
		opt=$prev sep=1
	fi
	# value of that option: its choices, or files for FILE/DIR values
	# (lines are "long short arg range choices"; "-" is an empty field)
	while IFS=$'\t' read -r long short arg range choices; do
		[[ $opt == "$long" || $opt == "$short" ]] || continue
		[[ $arg == - ]] && break
		# an optional value is never the next word
		[[ -n $sep && $optional == *" $long "* ]] && break
		if [[ -n $choices ]]; then
			COMPREPLY=($(compgen -P "$pfx" -W "$choices" -- "$val"))
		elif [[ $arg == *FILE* || $arg == *DIR* ]]; then
			COMPREPLY=($(compgen -P "$pfx" -f -- "$val"))
		fi
		return
	done < <(penny __complete "$cmd" 2>/dev/null)
	[[ -z $sep ]] && return
	if [[ $cur == -* ]]; then
		opts=$(penny __complete "$cmd" 2>/dev/null | cut -f1,2 | tr '\t' ' ' | sed 's/ -$//')
		COMPREPLY=($(compgen -W "$opts" -- "$cur"))
		return
	fi
	# the positional arguments: coll-test's COLLECTIVE (once), bw's HOST
	case $cmd in
	coll-test)
		for ((i = i + 1; i < COMP_CWORD; i++)); do
			w=${COMP_WORDS[i],,} flat=${w//[-_]/}
			case $flat in
			allgather | reducescatter | alltoall | broadcast | reduce | sendrecv) return ;;
			esac
		done
		COMPREPLY=($(compgen -W "allgather reducescatter alltoall broadcast reduce sendrecv" -- "$cur"))
		;;
	bw)
		COMPREPLY=($(compgen -A hostname -- "$cur"))
		;;
	esac
}
complete -F _penny penny
