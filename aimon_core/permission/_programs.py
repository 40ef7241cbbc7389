"""The read-only programs: which options, operands and forms each may be given.

One entry per program. An option that is not listed makes the command not read-only; the
``dangerous`` ones (run programs, write files) are also escape hatches that a broad allow rule
such as ``Bash(sort:*)`` does not cover. ``example`` is a read-only use the generated tests build
every spelling of every dangerous option around. Narrow on purpose: Codex CLI's "known safe
command" list is the reference, and a program whose forms cannot be made sure is left out.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from aimon_core.permission._optspec import OptionSpec, Parsed, options

Check = Callable[[Parsed], str | None]
"""Say why parsed arguments are still not read-only (an operand that writes), or None."""

_GNU = " --help --version"


@dataclass(frozen=True, slots=True, kw_only=True)
class Program:
    """A read-only program: its option spec, an extra check, and an example use."""

    spec: OptionSpec
    check: Check | None = None
    example: tuple[str, ...]
    any_args: bool = False  # echo, true, false: every argument is harmless text
    words: bool = False  # find: options are whole words, parsed by `_readonly`


def _gnu(allowed: str, *, dangerous: str = "", digits: bool = False,
         max_operands: int | None = None) -> OptionSpec:
    """Return the spec of a GNU program: getopt_long, so abbreviations and permutation."""
    return OptionSpec(allowed=options(allowed + _GNU), dangerous=options(dangerous),
                      digits=digits, max_operands=max_operands)


_DATE_FORMAT = re.compile(r"\+.*", re.DOTALL)
_SED_PRINT = re.compile(r"(\d+|\$)(,(\d+|\$))?p")


def _date_check(parsed: Parsed) -> str | None:
    # An operand that is not +FORMAT sets the clock (`date 01010000`).
    if any(not _DATE_FORMAT.fullmatch(o) for o in parsed.operands):
        return "an operand other than +FORMAT sets the date"
    return None


def _sed_check(parsed: Parsed) -> str | None:
    """Allow only ``sed -n 'Np'`` / ``sed -n 'N,Mp'`` with file operands (as Codex does)."""
    if not parsed.has("-n", "--quiet", "--silent"):
        return "sed without -n is only read-only in forms not proven here"
    scripts = [v or "" for name, v in parsed.options if name in {"-e", "--expression"}]
    if not scripts:
        if not parsed.operands:
            return "sed needs a script"
        scripts = [parsed.operands[0]]
    if not all(_SED_PRINT.fullmatch(s) for s in scripts):
        return "only `sed -n Np` and `sed -n N,Mp` scripts are known to be read-only"
    return None


# find's expression words and how many values each takes; none of them runs or writes.
FIND_PRIMARIES: dict[str, int] = {
    **dict.fromkeys((
        "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
        "-lname", "-ilname", "-type", "-xtype", "-size", "-mtime", "-mmin", "-atime", "-amin",
        "-ctime", "-cmin", "-newer", "-anewer", "-cnewer", "-perm", "-user", "-group", "-uid",
        "-gid", "-links", "-inum", "-samefile", "-maxdepth", "-mindepth", "-regextype",
        "-printf", "-fstype", "-used",
    ), 1),
    **dict.fromkeys((
        "-print", "-print0", "-ls", "-prune", "-quit", "-empty", "-readable", "-writable",
        "-executable", "-nouser", "-nogroup", "-true", "-false", "-depth", "-follow", "-xdev",
        "-mount", "-noleaf", "-daystart", "-ignore_readdir_race", "-noignore_readdir_race",
        "-not", "!", "-a", "-and", "-o", "-or", "(", ")", ",", "-help", "--help", "-version",
        "--version",
    ), 0),
}
FIND_NEWER = re.compile(r"-newer[aBcm][aBcmt]")


def _no_operands_check(parsed: Parsed) -> str | None:
    return "takes no operands" if parsed.operands else None


PROGRAMS: dict[str, Program] = {
    "ls": Program(example=("ls", "-la", "src"), spec=_gnu(
        "-a -A -b -B -c -C -d -f -F -g -G -h -H -i -k -l -L -m -n -N -o -p -q -Q -r -R -s -S -t"
        " -u -U -v -x -X -Z -1 -I= -T= -w= --all --almost-all --author --escape --block-size="
        " --ignore-backups --color? --classify? --directory --dired --file-type --format="
        " --full-time --group-directories-first --no-group --human-readable --si"
        " --dereference-command-line --dereference-command-line-symlink-to-dir --hide="
        " --hyperlink? --indicator-style= --inode --ignore= --kibibytes --dereference"
        " --literal --numeric-uid-gid --hide-control-chars --show-control-chars --quote-name"
        " --quoting-style= --reverse --recursive --size --sort= --time= --time-style="
        " --tabsize= --width= --context --zero")),
    "cat": Program(example=("cat", "-n", "a.txt"), spec=_gnu(
        "-A -b -e -E -n -s -t -T -u -v --show-all --number-nonblank --show-ends --number"
        " --squeeze-blank --show-tabs --show-nonprinting")),
    "head": Program(example=("head", "-n", "5", "a.txt"), spec=_gnu(
        "-c= -n= -q -v -z --bytes= --lines= --quiet --silent --verbose --zero-terminated",
        digits=True)),
    "tail": Program(example=("tail", "-n", "5", "a.txt"), spec=_gnu(
        "-c= -n= -f -F -q -v -z -s= --bytes= --lines= --follow? --retry --pid= --quiet"
        " --silent --verbose --zero-terminated --sleep-interval= --max-unchanged-stats=",
        digits=True)),
    "wc": Program(example=("wc", "-l", "a.txt"), spec=_gnu(
        "-c -m -l -L -w --bytes --chars --lines --max-line-length --words --files0-from="
        " --total=")),
    "pwd": Program(example=("pwd",), check=_no_operands_check, spec=_gnu("-L -P")),
    "echo": Program(example=("echo", "hi"), spec=OptionSpec(), any_args=True),
    "true": Program(example=("true",), spec=OptionSpec(), any_args=True),
    "false": Program(example=("false",), spec=OptionSpec(), any_args=True),
    "grep": Program(example=("grep", "-rn", "TODO", "src"), spec=_gnu(
        "-E -F -G -P -e= -f= -i -y -v -w -x -c -m= -o -q -s -b -H -h -n -T -Z -z -r -R -l"
        " -L -a -I -U -d= -D= -A= -B= -C= --extended-regexp --fixed-strings --basic-regexp"
        " --perl-regexp --regexp= --file= --ignore-case --no-ignore-case --word-regexp"
        " --line-regexp --null-data --no-messages --invert-match --max-count= --byte-offset"
        " --line-number --no-line-number --line-buffered --with-filename --no-filename"
        " --label= --only-matching --quiet --silent --binary-files= --text --directories="
        " --devices= --recursive --dereference-recursive --include= --exclude="
        " --exclude-from= --exclude-dir= --files-without-match --files-with-matches --count"
        " --initial-tab --null --before-context= --after-context= --context? --color?"
        " --colour? --binary", digits=True)),
    "rg": Program(example=("rg", "-n", "TODO", "src"), spec=OptionSpec(
        abbreviations=False,
        allowed=options(
            "-i -s -S -v -w -x -n -N -l -c -H -I -L -F -o -q -U -a -u -0 -e= -f= -g= -t= -T="
            " -A= -B= -C= -m= -M= -j= -E= -r= --files --type-list --json --vimgrep --column"
            " --no-heading --heading --color= --colors= --sort= --sortr= --glob= --iglob="
            " --type= --type-not= --max-depth= --max-count= --max-filesize= --max-columns="
            " --max-columns-preview --smart-case --case-sensitive --ignore-case"
            " --fixed-strings --word-regexp --line-regexp --invert-match --count"
            " --count-matches --files-with-matches --files-without-match --no-ignore"
            " --no-ignore-vcs --no-ignore-dot --no-ignore-parent --no-ignore-global --follow"
            " --hidden --no-hidden --line-number --no-line-number --only-matching --quiet"
            " --context= --before-context= --after-context= --regexp= --file= --text --trim"
            " --stats --no-messages --pcre2 --engine= --multiline --multiline-dotall"
            " --passthru --with-filename --no-filename --threads= --unrestricted"
            " --byte-offset --crlf --encoding= --no-config --replace= --path-separator="
            " --glob-case-insensitive --ignore-file= --one-file-system --null --help"
            " --version"),
        dangerous=options("-z --search-zip --pre= --pre-glob= --hostname-bin="))),
    # find's options are whole words; `_readonly` parses its expression with FIND_PRIMARIES.
    "find": Program(example=("find", ".", "-name", "*.py"), words=True, spec=OptionSpec(
        abbreviations=False, clusters=False,
        dangerous=options("-exec= -execdir= -ok= -okdir= -delete -fprint= -fprint0= -fprintf="
                          " -fls="))),
    "file": Program(example=("file", "-b", "a.txt"), spec=_gnu(
        "-b -i -L -h -k -r -s -E -N -0 -F= -e= -f= --brief --mime --mime-type"
        " --mime-encoding --dereference --no-dereference --keep-going --raw --extension"
        " --apple --separator= --exclude= --files-from= --print0 --no-pad --special-files",
        dangerous="-C --compile -z -Z --uncompress --uncompress-noreport -p --preserve-date")),
    "stat": Program(example=("stat", "a.txt"), spec=_gnu(
        "-L -f -t -c= --dereference --file-system --format= --printf= --terse --cached=")),
    "du": Program(example=("du", "-sh", "src"), spec=_gnu(
        "-0 -a -b -c -D -H -h -k -L -l -m -P -S -s -x -B= -d= -t= -X= --null --all"
        " --apparent-size --block-size= --bytes --total --dereference-args --max-depth="
        " --human-readable --si --inodes --count-links --dereference --no-dereference"
        " --separate-dirs --summarize --threshold= --time? --time-style= --exclude-from="
        " --exclude= --one-file-system --files0-from=")),
    "df": Program(example=("df", "-h"), spec=_gnu(
        "-a -h -H -i -k -l -P -T -v -B= -t= -x= --all --block-size= --human-readable --si"
        " --inodes --local --no-sync --sync --output? --portability --print-type --type="
        " --exclude-type= --total")),
    "which": Program(example=("which", "git"), spec=OptionSpec(
        abbreviations=False, allowed=options("-a"))),
    "whoami": Program(example=("whoami",), check=_no_operands_check, spec=_gnu("")),
    "date": Program(example=("date", "+%Y"), check=_date_check, spec=_gnu(
        "-u -R -I? -d= -f= -r= --date= --file= --iso-8601? --rfc-email --rfc-3339="
        " --reference= --universal --utc --debug --resolution",
        dangerous="-s= --set=", max_operands=1)),
    "uname": Program(example=("uname", "-a"), check=_no_operands_check, spec=_gnu(
        "-a -s -n -r -v -m -p -i -o --all --kernel-name --nodename --kernel-release"
        " --kernel-version --machine --processor --hardware-platform --operating-system")),
    "printenv": Program(example=("printenv", "HOME"), spec=_gnu("-0 --null")),
    "basename": Program(example=("basename", "a/b.py", ".py"), spec=_gnu(
        "-a -s= -z --multiple --suffix= --zero")),
    "dirname": Program(example=("dirname", "a/b"), spec=_gnu("-z --zero")),
    "realpath": Program(example=("realpath", "a"), spec=_gnu(
        "-e -m -L -P -q -s -z --canonicalize-existing --canonicalize-missing --logical"
        " --physical --quiet --strip --no-symlinks --zero --relative-to= --relative-base=")),
    "readlink": Program(example=("readlink", "-f", "a"), spec=_gnu(
        "-f -e -m -n -q -s -v -z --canonicalize --canonicalize-existing"
        " --canonicalize-missing --no-newline --quiet --silent --verbose --zero")),
    "tree": Program(example=("tree", "-L", "2", "src"), spec=OptionSpec(
        abbreviations=False, clusters=False,
        allowed=options(
            "-a -d -l -f -x -L= -P= -I= -F -s -h -D -p -u -g -C -n -i -t -r -v -U -Q -N"
            " --noreport --dirsfirst --prune --du --help --version"),
        dangerous=options("-o= -R"))),
    "sort": Program(example=("sort", "-n", "a.txt"), spec=_gnu(
        "-b -d -f -g -h -i -M -n -R -r -V -c -C -m -s -u -z -k= -t= -S= --ignore-leading-blanks"
        " --dictionary-order --ignore-case --general-numeric-sort --ignore-nonprinting"
        " --month-sort --human-numeric-sort --numeric-sort --random-sort --random-source="
        " --reverse --sort= --version-sort --batch-size= --check? --debug --files0-from="
        " --key= --merge --stable --buffer-size= --field-separator= --parallel= --unique"
        " --zero-terminated",
        dangerous="-o= --output= --compress-program= -T= --temporary-directory=")),
    "cut": Program(example=("cut", "-d:", "-f1", "a.txt"), spec=_gnu(
        "-b= -c= -d= -f= -n -s -z --bytes= --characters= --delimiter= --fields= --complement"
        " --only-delimited --output-delimiter= --zero-terminated")),
    "tr": Program(example=("tr", "a-z", "A-Z"), spec=_gnu(
        "-c -C -d -s -t --complement --delete --squeeze-repeats --truncate-set1",
        max_operands=2)),
    "diff": Program(example=("diff", "-u", "a", "b"), spec=_gnu(
        "-q -s -c -C= -u -U= -e -n -y -W= -t -T -N -a -b -B -w -i -E -Z -I= -r -x= -X= -S= -p"
        " -F= -d -L= --normal --brief --report-identical-files --context? --unified?"
        " --ed --rcs --side-by-side --width= --left-column --suppress-common-lines"
        " --show-c-function --show-function-line= --label= --expand-tabs --initial-tab"
        " --tabsize= --suppress-blank-empty --new-file --unidirectional-new-file --text"
        " --strip-trailing-cr --ignore-case --ignore-file-name-case"
        " --no-ignore-file-name-case --ignore-tab-expansion --ignore-trailing-space"
        " --ignore-space-change --ignore-all-space --ignore-blank-lines"
        " --ignore-matching-lines= --recursive --no-dereference --exclude= --exclude-from="
        " --starting-file= --from-file= --to-file= --minimal --speed-large-files"
        " --horizon-lines= --color? --palette=",
        dangerous="-l --paginate")),
    "cmp": Program(example=("cmp", "a", "b"), spec=_gnu(
        "-b -l -s -i= -n= --print-bytes --ignore-initial= --verbose --bytes= --quiet --silent",
        max_operands=4)),
    # A second operand of uniq is the file it writes.
    "uniq": Program(example=("uniq", "-c", "a.txt"), spec=_gnu(
        "-c -d -D -i -u -z -f= -s= -w= --count --repeated --all-repeated? --skip-fields="
        " --skip-chars= --unique --ignore-case --check-chars= --zero-terminated --group?",
        max_operands=1)),
    "nl": Program(example=("nl", "a.txt"), spec=_gnu(
        "-p -b= -d= -f= -h= -i= -l= -n= -s= -v= -w= --body-numbering= --section-delimiter="
        " --footer-numbering= --header-numbering= --line-increment= --join-blank-lines="
        " --number-format= --no-renumber --number-separator= --starting-line-number="
        " --number-width=")),
    "sed": Program(example=("sed", "-n", "1,20p", "a.txt"), check=_sed_check, spec=_gnu(
        "-n -e= -E -r -s -u -z --quiet --silent --expression= --regexp-extended --separate"
        " --unbuffered --null-data --posix --debug --sandbox -l= --line-length= -b --binary"
        " --follow-symlinks",
        dangerous="-i? --in-place? -f= --file=")),
}

PROGRAMS["type"] = Program(example=("type", "-a", "git"), spec=OptionSpec(
    abbreviations=False, allowed=options("-a -f -p -t -P")))


def _hatch_only(dangerous: str, known: str = "") -> OptionSpec:
    return OptionSpec(allowed=options(known), dangerous=options(dangerous))


# Programs that are never read-only but whose escape hatches a broad rule must not cover.
# ``known`` lists options that take a value, so `curl -XPOST` is not read as `-O`.
HATCH_ONLY: dict[str, OptionSpec] = {
    "curl": _hatch_only(
        "-o= -O -K= -D= -c= --output= --remote-name --remote-name-all --config= --dump-header="
        " --cookie-jar= --trace= --trace-ascii= --libcurl= --output-dir= --etag-save="
        " --stderr= --create-dirs",
        known="-A= -b= -C= -d= -e= -E= -F= -H= -m= -P= -r= -T= -u= -U= -w= -x= -X= -y= -Y= -z="
              " -Q="),
    "wget": _hatch_only(
        "-O= --output-document= -o= --output-file= -a= --append-output= -P="
        " --directory-prefix= -e= --execute= --use-askpass="),
    "tar": _hatch_only(
        "--to-command= --checkpoint-action= -I= --use-compress-program= --rsh-command="
        " --info-script= -F= --new-volume-script="),
    "rsync": _hatch_only("-e= --rsh= --rsync-path="),
    "man": _hatch_only("-P= --pager= -H? --html?"),
    "awk": _hatch_only("-f= --file= -E= --exec= -i= --include= -l= --load="),
}
HATCH_ONLY |= dict.fromkeys(("gawk", "mawk", "nawk"), HATCH_ONLY["awk"])
