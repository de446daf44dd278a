// Test helper run against Apache Paimon 0.9 (the oracle's bridge jar): replays compaction
// picks of the real UniversalCompaction / ForceUpLevel0Compaction / pickFullCompaction.
// Protocol: one case per stdin line:
//   <mode> <trigger> <maxSizeAmp> <sizeRatio> <numLevels> <level>:<size> <level>:<size> ...
// mode U = UniversalCompaction.pick, F = ForceUpLevel0Compaction.pick,
// P = CompactStrategy.pickFullCompaction. Runs are given as Levels.levelSortedRuns() lists them,
// one file per run. Answer per line: "<outputLevel> <number of files>" or "none".
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import org.apache.paimon.compact.CompactUnit;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.manifest.FileSource;
import org.apache.paimon.mergetree.LevelSortedRun;
import org.apache.paimon.mergetree.SortedRun;
import org.apache.paimon.mergetree.compact.CompactStrategy;
import org.apache.paimon.mergetree.compact.ForceUpLevel0Compaction;
import org.apache.paimon.mergetree.compact.UniversalCompaction;
import org.apache.paimon.stats.SimpleStats;

public class PickerOracle {
    public static void main(String[] args) throws Exception {
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        String line;
        int n = 0;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.isEmpty()) {
                continue;
            }
            String[] parts = line.split(" ");
            String mode = parts[0];
            int trigger = Integer.parseInt(parts[1]);
            int amp = Integer.parseInt(parts[2]);
            int ratio = Integer.parseInt(parts[3]);
            int numLevels = Integer.parseInt(parts[4]);
            List<LevelSortedRun> runs = new ArrayList<>();
            for (int i = 5; i < parts.length; i++) {
                String[] ls = parts[i].split(":");
                int level = Integer.parseInt(ls[0]);
                long size = Long.parseLong(ls[1]);
                DataFileMeta f =
                        DataFileMeta.forAppend(
                                "f-" + (n++), size, 1, SimpleStats.EMPTY_STATS, 0, 0, 0,
                                FileSource.APPEND);
                if (level > 0) {
                    f = f.upgrade(level);
                }
                runs.add(new LevelSortedRun(level, SortedRun.fromSingle(f)));
            }
            UniversalCompaction universal = new UniversalCompaction(amp, ratio, trigger);
            Optional<CompactUnit> unit;
            if (mode.equals("U")) {
                unit = universal.pick(numLevels, runs);
            } else if (mode.equals("F")) {
                unit = new ForceUpLevel0Compaction(universal).pick(numLevels, runs);
            } else {
                unit = CompactStrategy.pickFullCompaction(numLevels, runs);
            }
            if (unit.isPresent()) {
                out.append(unit.get().outputLevel())
                        .append(' ')
                        .append(unit.get().files().size())
                        .append('\n');
            } else {
                out.append("none\n");
            }
        }
        System.out.print(out);
        System.out.flush();
    }
}
