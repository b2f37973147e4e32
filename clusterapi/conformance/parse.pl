#!/usr/bin/env perl
# parse.pl: reads one package's `go test -json` stream and writes
#   RESULTS  one line per test: "<result>\t<name>\t<seconds>", result one of
#            pass, fail, skip, incomplete (started, never ended: the binary
#            died, e.g. a panic or -timeout); then "#package\t<pass|fail|none>\t<seconds>".
#   FAILURES the output of every failed or incomplete test that has no failed
#            descendant (parents are listed by name only), then, if the package
#            failed, the end of its own output (all of it kept when no test
#            failed: build errors, TestMain panics).
# Only core Perl (JSON::PP), so run.sh needs no Go helper of its own.
# usage: parse.pl JSON RESULTS FAILURES
use strict;
use warnings;
use JSON::PP;

my ($in, $results_path, $failures_path) = @ARGV;
die "usage: parse.pl JSON RESULTS FAILURES\n" unless defined $failures_path;

my $keep = 150;    # output lines kept per test (the last ones: where it failed)
my (%result, %elapsed, %out, @order, %seen);
my ($pkg_result, $pkg_elapsed, @pkg_out) = ('none', 0);

# go test -json writes one object per line, fields in a fixed order; a regex per
# field is much faster than JSON::PP on a suite's 100+ MB, and only the strings
# kept are decoded (at the end).
my $str = qr/"((?:[^"\\]|\\.)*)"/;
my $json = JSON::PP->new->utf8->allow_nonref;    # input is bytes
my %name_cache;
sub name { my $raw = shift; $name_cache{$raw} //= $json->decode(qq("$raw")) }
sub text { my $raw = shift; $json->decode(qq("$raw")) }

sub push_bounded {
    my ($list, $raw) = @_;
    push @$list, $raw;
    shift @$list if @$list > $keep;
}

open(my $fh, '<', $in) or die "parse.pl: $in: $!\n";
while (my $line = <$fh>) {
    next unless $line =~ /^\{/ && $line =~ /"Action":"([a-z-]+)"/;
    my $action = $1;
    my $out_raw = $line =~ /"Output":$str/ ? $1 : undef;
    if ($action eq 'build-output' || $action eq 'build-fail') {
        push_bounded(\@pkg_out, $out_raw) if defined $out_raw;
        next;
    }
    my $elapsed = $line =~ /"Elapsed":([0-9.eE+-]+)/ ? $1 : 0;
    if ($line !~ /"Test":$str/) {
        push_bounded(\@pkg_out, $out_raw) if $action eq 'output' && defined $out_raw;
        if ($action eq 'pass' || $action eq 'fail' || $action eq 'skip') {
            $pkg_result  = $action eq 'skip' ? 'pass' : $action;
            $pkg_elapsed = $elapsed;
        }
        next;
    }
    my $test = name($1);
    if (!$seen{$test}++) {
        push @order, $test;
        $result{$test} = 'incomplete';
        $out{$test}    = [];
    }
    if ($action eq 'output') {
        push_bounded($out{$test}, $out_raw) if defined $out_raw;
    } elsif ($action eq 'pass' || $action eq 'fail' || $action eq 'skip') {
        $result{$test}  = $action;
        $elapsed{$test} = $elapsed;
    }
}
close($fh);

open(my $rf, '>', $results_path) or die "parse.pl: $results_path: $!\n";
binmode($rf, ":encoding(UTF-8)");
for my $t (@order) {
    printf $rf "%s\t%s\t%.1f\n", $result{$t}, $t, $elapsed{$t} // 0;
}
printf $rf "#package\t%s\t%.1f\n", $pkg_result, $pkg_elapsed;
close($rf);

my @bad = grep { $result{$_} eq 'fail' || $result{$_} eq 'incomplete' } @order;
my %has_bad_child;
for my $t (@bad) {
    my $p = $t;
    while ($p =~ s{/[^/]*$}{}) { $has_bad_child{$p} = 1; }
}
open(my $ff, '>', $failures_path) or die "parse.pl: $failures_path: $!\n";
binmode($ff, ":encoding(UTF-8)");
for my $t (@bad) {
    if ($has_bad_child{$t}) {
        print $ff "=== $t: $result{$t} (see its subtests)\n";
        next;
    }
    print $ff "=== $t: $result{$t}\n", (map { text($_) } @{ $out{$t} }), "\n";
}
if ($pkg_result ne 'pass') {
    # With a failed test the package's own output is envtest noise; keep its end.
    my @tail = @bad ? @pkg_out[ -(@pkg_out < 10 ? @pkg_out : 10) .. -1 ] : @pkg_out;
    print $ff "=== package: $pkg_result (last ", scalar(@tail), " lines of its own output)\n",
        (map { text($_) } @tail), "\n";
}
close($ff);
